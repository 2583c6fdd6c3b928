/**
 * Opens what lives in the data directory: first its lock (one server per
 * directory, before anything in it is touched), then the database, the piece
 * store and the HMAC key. The directory holds e-mails and client addresses,
 * so it is kept 0700 and the database files 0600.
 *
 * If the directory cannot be used, the server still starts (so /healthz can
 * say why) with an in-memory database and a store that answers "offline".
 * Two things are the operator's to fix and refuse to start instead: a key
 * file that exists but is wrong (KeyFileError), and a directory another
 * process is serving (DirectoryLockedError).
 */
import type { Config } from "./config.ts";
import { dataDirPaths } from "./data_dir.ts";
import { DatabaseTooNewError, openDatabase } from "./db/database.ts";
import type { Database } from "./db/database.ts";
import { HmacKey, KeyFileError, keyFilePath } from "./auth/hmac_key.ts";
import { DirectoryLockedError, lockDirectory } from "./fs/dir_lock.ts";
import type { DirectoryLock } from "./fs/dir_lock.ts";
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
  /** Held while serving; released at shutdown. Null when no directory is bound. */
  lock: DirectoryLock | null;
}

export async function openDataDir(config: Config, logger: Logger): Promise<OpenedDataDir> {
  const { dataDir } = config;
  if (dataDir === null) {
    logger.warn("no data directory configured: storage offline");
    return await openOffline("no data directory configured (--data-dir)");
  }
  const paths = dataDirPaths(dataDir);
  let lock: DirectoryLock | null = null;
  try {
    // Created 0700 if missing; tightened only once the lock is ours (a second server
    // must change nothing).
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    lock = await lockDirectory(dataDir);
    await makePrivateDirectory(dataDir, logger);
    const store = await DiskStore.create({ root: paths.pieces });
    await makePrivateDatabaseFiles(paths.database);
    const db = openDatabase({ path: paths.database, busyTimeoutMs: config.dbBusyTimeoutMs });
    try {
      const hmacKey = await HmacKey.open({
        path: keyFilePath({ dataDir, keyFile: config.hmacKeyFile }),
        createIfMissing: config.hmacKeyFile === null,
      });
      return { db, store, persistent: true, dbPath: paths.database, hmacKey, lock };
    } catch (error) {
      db.close();
      throw error;
    }
  } catch (error) {
    lock?.release();
    if (
      error instanceof KeyFileError || error instanceof DirectoryLockedError ||
      error instanceof DatabaseTooNewError
    ) throw error;
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
    lock: null,
  };
}

/** Creates the directory 0700, or tightens an existing one that others can read. */
export async function makePrivateDirectory(path: string, logger: Logger): Promise<void> {
  await Deno.mkdir(path, { recursive: true, mode: 0o700 });
  const { mode } = await Deno.stat(path);
  if (mode !== null && (mode & 0o077) !== 0) {
    await Deno.chmod(path, 0o700);
    logger.info("data directory made private (0700)", { was: (mode & 0o777).toString(8) });
  }
}

/**
 * The database file 0600 before SQLite opens it: SQLite gives the -wal and
 * -shm files it creates the database file's mode, so they follow.
 */
export async function makePrivateDatabaseFiles(databasePath: string): Promise<void> {
  try {
    const file = await Deno.open(databasePath, { createNew: true, write: true, mode: 0o600 });
    file.close();
    return;
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
  for (const path of [databasePath, `${databasePath}-wal`, `${databasePath}-shm`]) {
    await Deno.chmod(path, 0o600).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}
