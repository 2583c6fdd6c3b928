/**
 * Opens what lives in the data directory: the database, the piece store and
 * the HMAC key. If the directory cannot be used, the server still starts (so
 * /healthz can say why) with an in-memory database and a store that answers
 * "offline"; a key file that exists but is wrong is the operator's to fix,
 * so that refuses to start (KeyFileError).
 */
import type { Config } from "./config.ts";
import { dataDirPaths } from "./data_dir.ts";
import { openDatabase } from "./db/database.ts";
import type { Database } from "./db/database.ts";
import { HmacKey, KeyFileError, keyFilePath } from "./auth/hmac_key.ts";
import type { Logger } from "./log.ts";
import { DiskStore } from "./storage/driver/disk/disk_store.ts";
import type { PieceStore } from "./storage/driver/driver.ts";
import { UnboundStore } from "./storage/driver/unbound.ts";

export interface OpenedDataDir {
  db: Database;
  store: PieceStore;
  /** False when the database lives in memory (no usable data directory). */
  persistent: boolean;
  /** The database file, watched by /healthz: SQLite keeps writing to a deleted file. */
  dbPath: string | null;
  hmacKey: HmacKey;
}

export async function openDataDir(config: Config, logger: Logger): Promise<OpenedDataDir> {
  const { dataDir } = config;
  if (dataDir === null) {
    logger.warn("no data directory configured: storage offline");
    return await openOffline("no data directory configured (--data-dir)");
  }
  const paths = dataDirPaths(dataDir);
  try {
    const store = await DiskStore.create({ root: paths.pieces });
    const db = openDatabase({ path: paths.database, busyTimeoutMs: config.dbBusyTimeoutMs });
    try {
      const hmacKey = await HmacKey.open({
        path: keyFilePath({ dataDir, keyFile: config.hmacKeyFile }),
        createIfMissing: config.hmacKeyFile === null,
      });
      return { db, store, persistent: true, dbPath: paths.database, hmacKey };
    } catch (error) {
      db.close();
      throw error;
    }
  } catch (error) {
    if (error instanceof KeyFileError) throw error;
    const hint = error instanceof Deno.errors.NotCapable
      ? ` (run with --allow-read=${dataDir} --allow-write=${dataDir})`
      : "";
    const reason = `Cannot use data directory ${dataDir}: ${(error as Error).message}${hint}`;
    logger.error("storage offline", { reason });
    return await openOffline(reason);
  }
}

async function openOffline(reason: string): Promise<OpenedDataDir> {
  return {
    // Tokens cannot be issued without a persistent database; this key verifies nothing.
    hmacKey: await HmacKey.open({ path: null, createIfMissing: false }),
    db: openDatabase({ path: ":memory:" }),
    store: new UnboundStore(reason),
    persistent: false,
    dbPath: null,
  };
}
