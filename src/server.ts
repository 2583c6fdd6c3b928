/**
 * Wires config → data directory → database → store → app → Deno.serve, and
 * takes it all down again. main.ts and the integration tests both start the
 * service through startServer, so tests run exactly what production runs.
 */
import { systemClock } from "./clock.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import { openDatabase } from "./db/database.ts";
import type { Database } from "./db/database.ts";
import { Records } from "./db/records.ts";
import { createApp } from "./http/app.ts";
import type { App } from "./http/app.ts";
import type { DatabaseHealth } from "./http/health.ts";
import { createStderrLogger } from "./log.ts";
import type { Logger } from "./log.ts";
import { DiskStore } from "./store/disk.ts";
import type { PieceStore } from "./store/driver.ts";
import { DATABASE_FILE, joinPath, PIECES_DIR } from "./store/paths.ts";
import { UnboundStore } from "./store/unbound.ts";
import { createAuthenticator } from "./auth/authenticator.ts";
import { HmacKeyRing, KeyFileError, keyFilePath } from "./auth/hmac_key.ts";
import { TokenService } from "./auth/tokens.ts";
import { TokenRecords } from "./db/token_records.ts";
import { MIB } from "./limits/tiers.ts";
import { HashWorkerPool } from "./piece_cid/pool.ts";

export interface StartServerOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger & { flush?(): Promise<void> };
  /** Wraps the piece store (fault-injection tests); production passes nothing. */
  wrapStore?: (store: PieceStore) => PieceStore;
}

export interface RunningServer {
  /** The listen address as a URL, e.g. http://127.0.0.1:8080 (no trailing slash). */
  url: string;
  baseUrl: string;
  port: number;
  app: App;
  store: PieceStore;
  db: Database;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes. */
  shutdown(options?: { timeoutMs?: number }): Promise<void>;
}

interface Storage {
  db: Database;
  store: PieceStore;
  persistent: boolean;
  /** The database file, watched by /healthz: SQLite keeps writing to a deleted file. */
  dbPath: string | null;
  keys: HmacKeyRing;
}

export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createStderrLogger();
  const storage = await prepareStorage(config, logger);
  if (options.wrapStore) storage.store = options.wrapStore(storage.store);
  const cleaned = await storage.store.cleanup();
  if (cleaned.removedTemporaryFiles > 0) {
    logger.info("removed leftovers of interrupted uploads", {
      files: cleaned.removedTemporaryFiles,
    });
  }

  const records = new Records(storage.db);
  const tokenRecords = new TokenRecords(storage.db);
  const tokens = new TokenService({
    keys: storage.keys,
    records: tokenRecords,
    clock,
    lifetimeDays: config.tokenLifetimeDays,
    maxQuotaMb: Math.floor(config.token.dailyCapBytes / MIB),
  });
  const hashPool = config.hashWorkers === 0
    ? null
    : new HashWorkerPool({ workers: config.hashWorkers ?? undefined });
  const stopWatchingKey = storage.keys.watch(
    config.hmacKeyReloadMs,
    (error) => logger.error("cannot reload HMAC key", { error: String(error) }),
  );
  const databaseHealth = (): DatabaseHealth => {
    try {
      storage.db.prepare("SELECT 1").get();
      if (storage.dbPath) Deno.statSync(storage.dbPath);
      return {
        ok: true,
        persistent: storage.persistent,
        detail: storage.persistent ? "sqlite" : "in-memory: no data directory bound",
      };
    } catch (error) {
      return { ok: false, persistent: storage.persistent, detail: (error as Error).message };
    }
  };

  // The app needs the base URL, which with --port 0 is known only after binding;
  // nothing is served before `app` is assigned because no await lies in between.
  const late: { app?: App } = {};
  const server = Deno.serve({
    hostname: config.hostname,
    port: config.port,
    onListen: () => {},
    onError: (error) => {
      logger.error("unhandled server error", { error: String(error) });
      return new Response(JSON.stringify({ error: "internal_error", message: "Internal error" }), {
        status: 500,
        headers: { "content-type": "application/json", "access-control-allow-origin": "*" },
      });
    },
  }, (request, info) => late.app!.fetch(request, info));
  const addr = server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `http://${host}:${addr.port}`;
  const baseUrl = config.baseUrl ?? url;
  const app = late.app = createApp({
    config,
    baseUrl,
    records,
    store: storage.store,
    clock,
    authenticator: createAuthenticator(tokens),
    tokens,
    tokenRecords,
    hashPool,
    logger,
    databaseHealth,
  });

  let stopping: Promise<void> | null = null;
  const shutdown = (opts: { timeoutMs?: number } = {}) =>
    stopping ??= (async () => {
      // Uploads first: server.shutdown() would cut their bodies off mid-stream.
      const { aborted } = await app.drainUploads(opts.timeoutMs ?? config.shutdownTimeoutMs);
      if (aborted > 0) logger.warn("shutdown: aborted uploads still in flight", { aborted });
      stopWatchingKey();
      await app.close();
      hashPool?.close();
      // A client that holds an idle connection open must not hold the process hostage.
      const closed = await raceTimeout(server.shutdown(), SERVER_CLOSE_TIMEOUT_MS);
      if (!closed) logger.warn("shutdown: connections still open, closing anyway");
      storage.db.close();
      await logger.flush?.();
    })();

  return { url, baseUrl, port: addr.port, app, store: storage.store, db: storage.db, shutdown };
}

const SERVER_CLOSE_TIMEOUT_MS = 2_000;

/** True if promise settled within ms. */
async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Creates the data directory if needed and opens what lives in it. If it
 * cannot be used, the server still starts (so /healthz can say why) with an
 * in-memory database and a store that answers "offline".
 */
async function prepareStorage(config: Config, logger: Logger): Promise<Storage> {
  const { dataDir } = config;
  if (dataDir === null) {
    logger.warn("no data directory configured: storage offline");
    return await offlineStorage("no data directory configured (--data-dir)");
  }
  const piecesDir = joinPath(dataDir, PIECES_DIR);
  try {
    const store = await DiskStore.create({ root: piecesDir });
    const dbPath = joinPath(dataDir, DATABASE_FILE);
    const db = openDatabase({ path: dbPath, busyTimeoutMs: config.dbBusyTimeoutMs });
    try {
      const keys = await HmacKeyRing.open({
        path: keyFilePath({ dataDir, keyFile: config.hmacKeyFile }),
        createIfMissing: config.hmacKeyFile === null,
      });
      return { db, store, persistent: true, dbPath, keys };
    } catch (error) {
      db.close();
      throw error;
    }
  } catch (error) {
    // A key file that exists but is wrong is the operator's to fix: refuse to start.
    if (error instanceof KeyFileError) throw error;
    const hint = error instanceof Deno.errors.NotCapable
      ? ` (run with --allow-read=${dataDir} --allow-write=${dataDir})`
      : "";
    const reason = `Cannot use data directory ${dataDir}: ${(error as Error).message}${hint}`;
    logger.error("storage offline", { reason });
    return await offlineStorage(reason);
  }
}

async function offlineStorage(reason: string): Promise<Storage> {
  return {
    // Tokens cannot be issued without a persistent database; this key only verifies nothing.
    keys: await HmacKeyRing.open({ path: null, createIfMissing: false }),
    db: openDatabase({ path: ":memory:" }),
    store: new UnboundStore(reason),
    persistent: false,
    dbPath: null,
  };
}
