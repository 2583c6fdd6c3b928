/**
 * Opens the backends a server runs on, as the configuration says:
 *
 * - metadata: SQLite in the data directory (default), or a shared PostgreSQL;
 * - pieces: the data directory (`--store disk`), or an S3-compatible bucket;
 * - the HMAC key: a file (the data directory's hmac.key, or --hmac-key-file),
 *   or, with PostgreSQL and no key file, a key kept in the database.
 *
 * The data directory is opened only when something lives there, and then its
 * lock comes first (one server per directory, before anything in it is
 * touched). It holds e-mails and client addresses, so it is kept 0700 and the
 * database files 0600.
 *
 * If the directory cannot be used, the server still starts (so /healthz can
 * say why) with an in-memory database and a store that answers "offline".
 * Refused at start instead, because they are the operator's to fix: a key file
 * that exists but is wrong (KeyFileError), a directory another process is
 * serving (DirectoryLockedError), a database newer than this build, and a
 * PostgreSQL that cannot be reached (an instance without its shared state
 * must not take traffic; the service manager restarts it).
 */
import type { Clock } from "./clock.ts";
import type { Config } from "./config/mod.ts";
import { dataDirPaths, makePrivateDatabaseFiles, makePrivateDirectory } from "./data_dir.ts";
import { DatabaseTooNewError, openDatabase } from "./db/sqlite/database.ts";
import type { Database } from "./db/sqlite/database.ts";
import { PostgresDatabase } from "./db/postgres/postgres_database.ts";
import { HmacKey, KeyFileError, keyFilePath } from "./auth/hmac_key.ts";
import { DirectoryLockedError, lockDirectory } from "./fs/dir_lock.ts";
import type { DirectoryLock } from "./fs/dir_lock.ts";
import type { Logger } from "./log.ts";
import { postgresMetadata, sqliteMetadata } from "./metadata.ts";
import type { Metadata } from "./metadata.ts";
import { DiskStore } from "./storage/driver/disk/disk_store.ts";
import type { PieceStore } from "./storage/driver/driver.ts";
import { UnboundStore } from "./storage/driver/unbound.ts";

export interface OpenedBackends {
  metadata: Metadata;
  /** The SQLite database the metadata is in; null with PostgreSQL. */
  sqlite: Database | null;
  store: PieceStore;
  /** The SQLite database file, for the metrics' file sizes; null otherwise. */
  dbPath: string | null;
  hmacKey: HmacKey;
  /** Where the key is kept, for the start-up summary; null for a key in memory. */
  hmacKeyWhere: string | null;
  /** Held while serving; released at shutdown. Null when no directory is used. */
  lock: DirectoryLock | null;
}

export async function openBackends(
  config: Config,
  logger: Logger,
  clock: Clock,
): Promise<OpenedBackends> {
  const usesDataDir = config.databaseUrl === null || config.store === "disk";
  if (!usesDataDir) return await openShared(config, logger);
  const { dataDir } = config;
  if (dataDir === null) {
    logger.warn("no data directory configured: storage offline");
    return await openOffline("no data directory configured (--data-dir)", clock);
  }
  const paths = dataDirPaths(dataDir);
  let lock: DirectoryLock | null = null;
  let postgres: PostgresDatabase | null = null;
  try {
    // Created 0700 if missing; tightened only once the lock is ours (a second server
    // must change nothing).
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    lock = await lockDirectory(dataDir);
    await makePrivateDirectory(dataDir, logger);
    const store = config.store === "s3"
      ? await openS3Store(config)
      : await DiskStore.create({ root: paths.pieces });
    if (config.databaseUrl !== null) {
      postgres = await PostgresDatabase.open({ url: config.databaseUrl, logger });
      const hmacKey = await openHmacKey(config, postgres);
      return {
        metadata: postgresMetadata(postgres),
        sqlite: null,
        store,
        dbPath: null,
        hmacKey,
        hmacKeyWhere: config.hmacKeyFile ?? "the database",
        lock,
      };
    }
    await makePrivateDatabaseFiles(paths.database);
    const db = openDatabase({ path: paths.database, busyTimeoutMs: config.dbBusyTimeoutMs });
    try {
      const keyFile = keyFilePath({ dataDir, keyFile: config.hmacKeyFile })!;
      const hmacKey = await HmacKey.open({
        path: keyFile,
        createIfMissing: config.hmacKeyFile === null,
      });
      return {
        metadata: sqliteMetadata({ db, clock, path: paths.database }),
        sqlite: db,
        store,
        dbPath: paths.database,
        hmacKey,
        hmacKeyWhere: keyFile,
        lock,
      };
    } catch (error) {
      db.close();
      throw error;
    }
  } catch (error) {
    lock?.release();
    await postgres?.close();
    if (
      error instanceof KeyFileError || error instanceof DirectoryLockedError ||
      error instanceof DatabaseTooNewError || config.databaseUrl !== null
    ) throw error;
    const hint = error instanceof Deno.errors.NotCapable
      ? ` (run with --allow-read=${dataDir} --allow-write=${dataDir})`
      : "";
    const reason = `Cannot use data directory ${dataDir}: ${(error as Error).message}${hint}`;
    logger.error("storage offline", { reason });
    return await openOffline(reason, clock);
  }
}

/** PostgreSQL and a bucket: nothing on this machine, so any number of instances can run. */
async function openShared(config: Config, logger: Logger): Promise<OpenedBackends> {
  const postgres = await PostgresDatabase.open({ url: config.databaseUrl!, logger });
  try {
    return {
      metadata: postgresMetadata(postgres),
      sqlite: null,
      store: await openS3Store(config),
      dbPath: null,
      hmacKey: await openHmacKey(config, postgres),
      hmacKeyWhere: config.hmacKeyFile ?? "the database",
      lock: null,
    };
  } catch (error) {
    await postgres.close();
    throw error;
  }
}

/**
 * The bucket of --store s3 (also the migrate command's target). Loaded only when
 * asked for: the single-box default never loads the S3 client.
 */
export async function openS3Store(config: Config): Promise<PieceStore> {
  const { S3Store } = await import("./storage/driver/s3/s3_store.ts");
  const s3 = config.s3!;
  return new S3Store({
    endpoint: s3.endpoint,
    bucket: s3.bucket,
    region: s3.region,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    source: s3.sourceLabel,
  });
}

/** The operator's key file when named (every instance reads the same file), else the database's. */
async function openHmacKey(config: Config, postgres: PostgresDatabase): Promise<HmacKey> {
  if (config.hmacKeyFile !== null) {
    return await HmacKey.open({ path: config.hmacKeyFile, createIfMissing: false });
  }
  return await HmacKey.fromSource(postgres.hmacKeys);
}

async function openOffline(reason: string, clock: Clock): Promise<OpenedBackends> {
  const db = openDatabase({ path: ":memory:" });
  return {
    // Tokens cannot be issued without a persistent database; this key verifies nothing.
    hmacKey: await HmacKey.open({ path: null, createIfMissing: false }),
    hmacKeyWhere: null,
    metadata: sqliteMetadata({ db, clock, path: null }),
    sqlite: db,
    store: new UnboundStore(reason),
    dbPath: null,
    lock: null,
  };
}
