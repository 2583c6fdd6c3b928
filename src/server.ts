/**
 * The composition root: config → backends (metadata in SQLite or PostgreSQL,
 * pieces on disk or in a bucket, the HMAC key) → every long-lived object → routes → app → Deno.serve (over TLS when
 * configured, its certificate reloaded when the files change), and the
 * shutdown that takes it all down again in order. Nothing else in src/
 * constructs a long-lived object. main.ts and the integration tests both
 * start the service through startServer, so tests run what production runs.
 */
import { systemClock } from "./clock.ts";
import { ApiError, errorResponse } from "./errors.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config/mod.ts";
import { openBackends } from "./backends_open.ts";
import type { Metadata } from "./metadata.ts";
import type { Database } from "./db/sqlite/database.ts";
import { createApp } from "./http/app.ts";
import { createRetrieval, RETRIEVAL_PATH } from "./http/pieces.ts";
import { createRoutes, UPLOAD_PATH } from "./http/routes.ts";
import type { RouteServices } from "./http/routes.ts";
import type { Route } from "./http/router.ts";
import { SmallPieceCache } from "./http/small_piece_cache.ts";
import { UploadDrain } from "./http/upload_drain.ts";
import { createAuthenticator } from "./auth/authenticator.ts";
import { SignupVerification } from "./auth/signup_verification.ts";
import { createSmtpMailer } from "./mail/mailer.ts";
import { TokenService } from "./auth/tokens.ts";
import { MIB, UploadPolicies } from "./limits/tiers.ts";
import { UploadAdmission } from "./limits/upload_admission.ts";
import { WindowLimit } from "./limits/window_limit.ts";
import { createStderrLogger, resolveLogFormat } from "./log.ts";
import type { Logger } from "./log.ts";
import { createServiceMetrics } from "./metrics/service_metrics.ts";
import { diskSpaceReader } from "./metrics/disk_space.ts";
import { StoredTotals } from "./metrics/stored_totals.ts";
import { HashWorkerPool } from "./piece_cid/pool.ts";
import { PieceCatalog } from "./storage/catalog.ts";
import { DealIdGenerator } from "./storage/deal_id.ts";
import { PieceDigests } from "./storage/digests.ts";
import { CorruptPieceWatch } from "./storage/corrupt_watch.ts";
import { PeriodicScrub } from "./storage/periodic_scrub.ts";
import { scrubPieces } from "./storage/scrub.ts";
import type { PieceStore } from "./storage/driver/driver.ts";
import { StoreReachability } from "./storage/reachability.ts";
import { WalletChain } from "./wallet/chain.ts";
import { WalletSignIn } from "./auth/wallet_sign_in.ts";
import { readTlsPair } from "./net/tls_files.ts";
import { startTlsReload } from "./net/tls_reload.ts";
import { SwappableServer } from "./net/swappable_server.ts";
import { logStartupSummary } from "./startup_summary.ts";

export interface StartServerOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger & { flush?(): Promise<void> };
  /** Wraps the piece store (fault-injection tests); production passes nothing. */
  wrapStore?: (store: PieceStore) => PieceStore;
  /** How often cached retrievals re-check that the store is there (default 1 s). */
  storeProbeIntervalMs?: number;
  /** Overrides --scrub-interval (given in hours) for tests; 0 = no periodic scrub. */
  scrubIntervalMs?: number;
  /** How often the TLS files are checked for a renewal (default 5 s). */
  tlsPollIntervalMs?: number;
}

export interface RunningServer {
  /** The listen address as a URL, e.g. http://127.0.0.1:8080 (no trailing slash). */
  url: string;
  baseUrl: string;
  port: number;
  /** The long-lived objects, for tests that look inside (ledger, digests, …). */
  services: RouteServices;
  routes: readonly Route[];
  store: PieceStore;
  /** Where the records live (SQLite or PostgreSQL), for tests that look inside. */
  metadata: Metadata;
  /** The SQLite database, for tests that look inside; throws when the metadata is in PostgreSQL. */
  readonly db: Database;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes. */
  shutdown(options?: { timeoutMs?: number }): Promise<void>;
}

const DEFAULT_STORE_PROBE_INTERVAL_MS = 1000;
const HOUR_MS = 3_600_000;
/** Certificates renew weeks before they expire: a few seconds to notice is plenty. */
const DEFAULT_TLS_POLL_INTERVAL_MS = 5_000;
/** A client that holds an idle connection open must not hold the process hostage. */
const SERVER_CLOSE_TIMEOUT_MS = 2_000;
const SIGNUP_WINDOW_MS = 3_600_000;
/** Sign-in nonces one client IP may ask for per hour (each is a row until spent or expired). */
const WALLET_NONCES_PER_HOUR = 300;
/** Pieces up to this size are served from memory once read. */
const SMALL_PIECE_MAX_BYTES = 64 * 1024;

export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ??
    createStderrLogger({ format: resolveLogFormat(config.logFormat) });

  // Bad TLS files stop the start before the data directory is touched.
  const tlsPair = config.tls === null ? null : await readTlsPair(config.tls);
  const backends = await openBackends(config, logger, clock);
  const { metadata } = backends;
  const store = options.wrapStore ? options.wrapStore(backends.store) : backends.store;
  const cleaned = await store.cleanup();
  if (cleaned.removedTemporaryFiles > 0) {
    logger.info("removed leftovers of interrupted uploads", {
      files: cleaned.removedTemporaryFiles,
    });
  }

  const records = metadata.catalog;
  const tokenRecords = metadata.tokens;
  const tokens = new TokenService({
    hmacKey: backends.hmacKey,
    records: tokenRecords,
    clock,
    lifetimeDays: config.tokenLifetimeDays,
    maxQuotaMb: Math.floor(config.token.dailyCapBytes / MIB),
  });
  const stopWatchingKey = backends.hmacKey.watch(
    config.hmacKeyReloadMs,
    (error) => logger.error("cannot reload HMAC key", { error: String(error) }),
  );
  const hashPool = config.hashWorkers === 0
    ? null
    : new HashWorkerPool({ workers: config.hashWorkers ?? undefined });
  const digests = new PieceDigests({ store, records, logger });
  const resumed = await digests.resume();
  if (resumed > 0) logger.info("hashing pieces stored before the last stop", { resumed });
  const catalog = new PieceCatalog({
    store,
    records,
    clock,
    dealIds: new DealIdGenerator(clock),
    digests,
    cidLocks: metadata.cidLocks,
  });
  const ledger = metadata.capLedger;
  const storeProbeIntervalMs = options.storeProbeIntervalMs ?? DEFAULT_STORE_PROBE_INTERVAL_MS;
  const reachability = new StoreReachability({
    store,
    intervalMs: storeProbeIntervalMs,
  });
  const retrieval = createRetrieval({
    store,
    catalog,
    logger,
    reachability,
    cache: new SmallPieceCache({
      maxPieceBytes: SMALL_PIECE_MAX_BYTES,
      maxTotalBytes: config.smallPieceCacheBytes,
    }),
  });
  const corruptWatch = new CorruptPieceWatch({
    marksAfter: (mark) => records.corruptMarksAfter(mark),
    onCorrupt: (cid) => retrieval.distrust(cid),
    intervalMs: storeProbeIntervalMs,
    onError: (error) => logger.warn("cannot read corrupt-piece marks", { error: String(error) }),
  });
  const scrubIntervalMs = options.scrubIntervalMs ?? config.scrubIntervalHours * HOUR_MS;
  const periodicScrub = scrubIntervalMs > 0 && metadata.persistent
    ? new PeriodicScrub({
      intervalMs: scrubIntervalMs,
      logger,
      scrub: (signal, onFailure) =>
        scrubPieces({
          store,
          records,
          bytesPerSecond: config.scrubBytesPerSecond,
          hashPool,
          clock,
          signal,
          onFailure: (failure) => {
            retrieval.distrust(failure.cid);
            onFailure(failure);
          },
        }),
    })
    : null;
  const uploadDrain = new UploadDrain();
  // With --metrics false nothing is made, so nothing is counted.
  const metrics = config.metricsEnabled
    ? createServiceMetrics({
      fastPathRoute: RETRIEVAL_PATH,
      uploadRoute: UPLOAD_PATH,
      digests,
      hashPool,
      uploads: uploadDrain,
      storedTotals: metadata.persistent
        ? new StoredTotals({ count: () => records.storedTotals() })
        : null,
      databaseFiles: backends.dbPath === null ? [] : [
        { kind: "db", path: backends.dbPath },
        { kind: "wal", path: `${backends.dbPath}-wal` },
      ],
      diskSpace: metadata.persistent && config.dataDir !== null && config.store === "disk"
        ? diskSpaceReader(config.dataDir)
        : null,
    })
    : null;
  const admission = new UploadAdmission({
    maxPinnedBytes: config.uploadMemoryBytes,
    maxPerClient: config.maxUploadsPerClient,
  });
  const signupLimit = new WindowLimit({
    limit: config.signupsPerHour,
    windowMs: SIGNUP_WINDOW_MS,
    clock,
  });
  const { wallet } = config;
  const walletChain = wallet.rpcUrl !== null && wallet.chainId !== null &&
      wallet.usdcAddress !== null
    ? new WalletChain({
      rpcUrl: wallet.rpcUrl,
      chainId: wallet.chainId,
      usdcAddress: wallet.usdcAddress,
      balanceTtlMs: wallet.balanceTtlMs,
      clock,
      logger,
    })
    : null;
  const policies = new UploadPolicies({ config, walletBalances: walletChain });
  const walletNonceLimit = new WindowLimit({
    limit: WALLET_NONCES_PER_HOUR,
    windowMs: SIGNUP_WINDOW_MS,
    clock,
  });
  const mailer = config.smtpUrl && config.mailFrom
    ? createSmtpMailer({ url: config.smtpUrl, from: config.mailFrom })
    : null;
  const authenticator = createAuthenticator(tokens);

  const stopBackgroundWork = async () => {
    stopWatchingKey();
    reachability.stop();
    corruptWatch.stop();
    await periodicScrub?.stop();
    await digests.stop();
    hashPool?.close();
    mailer?.close();
  };
  const closeStorage = async () => {
    await metadata.close();
    backends.lock?.release();
  };

  // With --port 0 the base URL is known only once bound. Requests are dispatched
  // after this synchronous block ends, so `app` is assigned before the first one.
  let server: SwappableServer;
  try {
    server = new SwappableServer({
      hostname: config.hostname,
      port: config.port,
      tls: tlsPair,
      onError: (error) => {
        // Our pipeline renders its own errors; this catches only what escapes it.
        logger.error("unhandled server error", { error: String(error) });
        return errorResponse(new ApiError("internal_error", "Internal server error"));
      },
      handler: (request, info) => app.fetch(request, info),
    });
  } catch (error) {
    // Nothing is served: take down what was started (a port in use must not leave the
    // data directory locked, or timers and workers running).
    await stopBackgroundWork();
    await closeStorage();
    throw error;
  }
  const host = server.addr.hostname.includes(":")
    ? `[${server.addr.hostname}]`
    : server.addr.hostname;
  const url = `${server.scheme}://${host}:${server.addr.port}`;
  const baseUrl = config.baseUrl ?? url;
  logStartupSummary(logger, {
    config,
    url,
    baseUrl,
    certificate: tlsPair?.certificate ?? null,
    hmacKeyWhere: backends.hmacKeyWhere,
  });
  if (config.signup === "open" && !isLoopback(server.addr.hostname)) {
    logger.warn(
      "signup is open on a public address: anyone can mint a token for any e-mail and read " +
        "and revoke that user's files and tokens; use --signup verify or --signup closed",
      { hostname: server.addr.hostname },
    );
  }
  if (config.metricsEnabled && config.metricsToken === null && !isLoopback(server.addr.hostname)) {
    logger.warn(
      "/metrics is public on a public address: anyone can read traffic, disk and memory " +
        "figures; set --metrics-token, keep /metrics behind the proxy, or --metrics false",
      { hostname: server.addr.hostname },
    );
  }
  const signupVerification = config.signup === "verify" && mailer
    ? new SignupVerification({ records: metadata.signupCodes, mailer, clock, baseUrl })
    : null;
  const walletSignIn = walletChain === null || wallet.chainId === null ? null : new WalletSignIn({
    nonces: metadata.walletNonces,
    tokens,
    verifier: walletChain,
    clock,
    baseUrl,
    chainId: wallet.chainId,
  });
  const services: RouteServices = {
    config,
    baseUrl,
    clock,
    store,
    records,
    tokenRecords,
    tokens,
    catalog,
    digests,
    ledger,
    policies,
    admission,
    hashPool,
    retrieval,
    signupLimit,
    signupVerification,
    walletChain,
    walletSignIn,
    walletNonceLimit,
    uploadDrain,
    databaseHealth: () => metadata.health(),
    databasePersistent: metadata.persistent,
    metrics,
  };
  const routes = createRoutes(services);
  const app = createApp({
    routes,
    fastPath: retrieval.fastPath,
    authenticator,
    baseUrl,
    trustedProxies: config.trustedProxies,
    logger,
    logRequests: config.logRequests,
    bodyIdleTimeoutMs: config.bodyIdleTimeoutMs,
    uploadDrain,
    metrics: metrics?.requests ?? null,
  });

  const tlsReload = config.tls === null || tlsPair === null ? null : startTlsReload({
    files: config.tls,
    server,
    current: tlsPair,
    pollIntervalMs: options.tlsPollIntervalMs ?? DEFAULT_TLS_POLL_INTERVAL_MS,
    uploadsInFlight: () => uploadDrain.inFlight,
    maxUploadWaitMs: config.shutdownTimeoutMs,
    logger,
  });

  let stopping: Promise<void> | null = null;
  const shutdown = (opts: { timeoutMs?: number } = {}) =>
    stopping ??= (async () => {
      const started = performance.now();
      await tlsReload?.stop();
      // Uploads first: server.shutdown() would cut their bodies off mid-stream.
      const inFlight = uploadDrain.inFlight;
      const { aborted } = await uploadDrain.drain(opts.timeoutMs ?? config.shutdownTimeoutMs);
      if (aborted > 0) logger.warn("shutdown: aborted uploads still in flight", { aborted });
      await stopBackgroundWork();
      const closed = await settlesWithin(server.shutdown(), SERVER_CLOSE_TIMEOUT_MS);
      if (!closed) logger.warn("shutdown: connections still open, closing anyway");
      await closeStorage();
      logger.info("stopped", {
        uploadsFinished: inFlight - aborted,
        uploadsAborted: aborted,
        connectionsClosed: closed,
        ms: Math.round(performance.now() - started),
      });
      await logger.flush?.();
    })();

  return {
    url,
    baseUrl,
    port: server.addr.port,
    services,
    routes,
    store,
    metadata,
    get db(): Database {
      if (backends.sqlite === null) throw new Error("This server keeps its metadata in PostgreSQL");
      return backends.sqlite;
    },
    shutdown,
  };
}

/** Loopback listen addresses: open signup there is reachable only from this machine. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || hostname.startsWith("127.");
}

/** True if the promise settled within ms. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
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
