/**
 * Opens the backends the configuration names, for the server and for every
 * operator command alike (one function, so a command works on every
 * deployment the server does):
 *
 * - metadata: SQLite in the data directory (default), or a shared PostgreSQL;
 * - pieces: the data directory (`--store disk`), or an S3-compatible bucket;
 * - the HMAC key: a file (the data directory's hmac.key, or --hmac-key-file),
 *   or, with PostgreSQL and no key file, a key kept in the database.
 *
 * The caller says what it needs (`needs`), how the data directory is met
 * (made, or required as it is, or only read) and whether to hold its lock;
 * anything it did not ask for is not opened. The data directory is used
 * only when something it needs lives there, and then the lock comes first
 * (one server per directory, before anything in it is touched). It holds
 * e-mails and client addresses, so it is made 0700 and the database 0600.
 *
 * A server whose directory cannot be used still starts (so /healthz can say
 * why) with an in-memory database and a store that answers "offline"
 * (`offlineWhenUnusable`). Refused at start instead, because they are the
 * operator's to fix: a key file that exists but is wrong (KeyFileError), a
 * directory another process is serving (DirectoryLockedError), a database
 * newer than this build, and a PostgreSQL that cannot be reached (an
 * instance without its shared state must not take traffic). A command is
 * refused whatever the reason, with one line naming it.
 */
import type { Clock } from "../kernel/clock.ts";
import { ConfigError } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import {
  dataDirPaths,
  makePrivateDatabaseFiles,
  makePrivateDirectory,
} from "../kernel/data_dir.ts";
import { DatabaseTooNewError, openDatabase, openDatabaseReadOnly } from "../db/sqlite/database.ts";
import type { Database } from "../db/sqlite/database.ts";
import { PostgresDatabase } from "../db/postgres/postgres_database.ts";
import type { PostgresDatabaseOptions } from "../db/postgres/postgres_database.ts";
import {
  HmacKey,
  KeyFileError,
  keyFilePath,
  keyFilePlace,
  sharedKeyPlace,
} from "../auth/hmac_key.ts";
import type { HmacKeyPlace } from "../auth/hmac_key.ts";
import {
  DirectoryLockedError,
  lockDirectory,
  lockDirectoryReadOnly,
} from "../kernel/fs/dir_lock.ts";
import type { DirectoryLock } from "../kernel/fs/dir_lock.ts";
import { pathExists } from "../kernel/fs/files.ts";
import type { Logger } from "../kernel/log.ts";
import { postgresMetadata, sqliteMetadata } from "./metadata.ts";
import type { Metadata } from "./metadata.ts";
import { DiskStore } from "../driver/disk/disk_store.ts";
import type { PieceStore } from "../driver/driver.ts";
import { UnboundStore } from "../driver/unbound.ts";

/** What a caller opens; the HMAC key's place is always given (it costs nothing). */
export interface BackendNeeds {
  /**
   * The metadata: "records" (SQLite in the data directory, or PostgreSQL,
   * behind the Metadata records), or only the "database" itself, as it is
   * (a backup reads a snapshot of it: `sqlite` or `postgres` below).
   */
  metadata: "records" | "database" | false;
  /** The piece store: the data directory's pieces/, or the bucket. */
  store: boolean;
  /** The signing key itself, opened (and made where the server would make it). */
  hmacKey: boolean;
}

/**
 * How the data directory is met:
 * - "create": made (0700), with what is missing in it, as a server makes it;
 * - "existing": it must hold what is needed already, else a ConfigError
 *   naming what is missing (a mistyped --data-dir creates nothing);
 * - "read-only": as "existing", and nothing in it is written: SQLite is
 *   opened read-only with its schema as it is.
 */
export type DataDirAccess = "create" | "existing" | "read-only";

/**
 * The data directory's serve lock: "hold" it (another holder is an error),
 * "try" (hold it when free, else say who has it; with "read-only" access,
 * through the existing lock file opened read-only, so nothing is written), or
 * "none" (commands that write only in transactions and atomic renames, safe
 * beside a server).
 */
export type LockMode = "hold" | "try" | "none";

export interface OpenBackendsOptions<N extends BackendNeeds> {
  needs: N;
  dataDir: DataDirAccess;
  lock: LockMode;
  /** The server: an unusable data directory starts it offline instead of failing. */
  offlineWhenUnusable?: boolean;
  /** How often an instance beats, and after how much silence it is dead (tests shorten them). */
  postgresTimings?: Pick<PostgresDatabaseOptions, "heartbeatMs" | "deadAfterMs">;
  logger: Logger;
  clock: Clock;
}

/** What a server opens: everything, its directory made and held, offline rather than refused. */
export const SERVING = {
  needs: { metadata: "records", store: true, hmacKey: true },
  dataDir: "create",
  lock: "hold",
  offlineWhenUnusable: true,
} as const;

/** T when the need is true; null when it is false (T | null when not known). */
type Needed<B, T> = B extends true ? T : null;
type Records<M> = M extends "records" ? Metadata : null;

export interface OpenedBackends<N extends BackendNeeds = BackendNeeds> {
  metadata: Records<N["metadata"]>;
  store: Needed<N["store"], PieceStore>;
  hmacKey: Needed<N["hmacKey"], HmacKey>;
  /** Where the key is kept; null only when there is no such place (offline, no key file). */
  keyPlace: HmacKeyPlace | null;
  /** keyPlace's `where`, for the start-up summary; null for a key in memory. */
  hmacKeyWhere: string | null;
  /** The SQLite database the metadata is in; null with PostgreSQL. */
  sqlite: Database | null;
  /** The SQLite database file (metrics' file sizes, a backup's source); null otherwise. */
  dbPath: string | null;
  /** The shared database, when the configuration names one and something needed it. */
  postgres: PostgresDatabase | null;
  /** Held while serving; released at shutdown. Null when no directory lock is held. */
  lock: DirectoryLock | null;
  /** With lock "try": why the lock is not held (another process serves the directory). */
  lockHeldElsewhere: string | null;
  /** Closes and releases everything opened (for commands; the server stops in its own order). */
  close(): Promise<void>;
}

type Opened = OpenedBackends<BackendNeeds>;

export async function openBackends<const N extends BackendNeeds>(
  config: Config,
  options: OpenBackendsOptions<N>,
): Promise<OpenedBackends<N>> {
  const { needs } = options;
  const usesDataDir = (needs.metadata !== false && config.databaseUrl === null) ||
    (needs.store && config.store === "disk");
  if (usesDataDir && config.dataDir === null) {
    if (!options.offlineWhenUnusable) {
      throw new ConfigError("no data directory configured: set --data-dir (or --database)");
    }
    options.logger.warn("no data directory configured: storage offline");
    const offline = await openOffline("no data directory configured (--data-dir)", options.clock);
    return offline as OpenedBackends<N>;
  }
  const opened = blank();
  try {
    // The shared database first: one that cannot be reached leaves the directory untouched.
    const keyInDatabase = config.databaseUrl !== null && config.hmacKeyFile === null;
    if (config.databaseUrl !== null && (needs.metadata !== false || keyInDatabase)) {
      opened.postgres = await PostgresDatabase.open({
        url: config.databaseUrl,
        logger: options.logger,
        timeoutMs: config.dbTimeoutMs,
        ...options.postgresTimings,
      });
    }
    if (usesDataDir) await openDataDir(config, options, opened);
    if (needs.store) {
      // With PostgreSQL, staging keys name the instance, so a dead one's leftovers are known.
      opened.store = await openStore(config, options.dataDir, opened.postgres?.instanceId);
    }
    if (needs.metadata !== false) await openMetadata(config, options, opened);
    opened.keyPlace = keyPlaceOf(config, options.dataDir, opened.postgres);
    opened.hmacKeyWhere = opened.keyPlace?.where ?? null;
    if (needs.hmacKey) {
      if (opened.keyPlace === null) {
        throw new ConfigError("no key file: set --data-dir or --hmac-key-file");
      }
      opened.hmacKey = await opened.keyPlace.open();
    }
    return opened as OpenedBackends<N>;
  } catch (error) {
    await opened.close();
    if (
      !options.offlineWhenUnusable || !usesDataDir || config.databaseUrl !== null ||
      error instanceof KeyFileError || error instanceof DirectoryLockedError ||
      error instanceof DatabaseTooNewError
    ) throw error;
    const dataDir = config.dataDir!;
    const hint = error instanceof Deno.errors.NotCapable
      ? ` (run with --allow-read=${dataDir} --allow-write=${dataDir})`
      : "";
    const reason = `Cannot use data directory ${dataDir}: ${(error as Error).message}${hint}`;
    options.logger.error("storage offline", { reason });
    return await openOffline(reason, options.clock) as OpenedBackends<N>;
  }
}

function blank(): Opened {
  const opened: Opened = {
    metadata: null,
    store: null,
    hmacKey: null,
    keyPlace: null,
    hmacKeyWhere: null,
    sqlite: null,
    dbPath: null,
    postgres: null,
    lock: null,
    lockHeldElsewhere: null,
    async close() {
      if (opened.metadata !== null) await opened.metadata.close();
      else opened.sqlite?.close();
      await opened.postgres?.close();
      opened.lock?.release();
    },
  };
  return opened;
}

/** Makes or checks the directory, then takes its lock as asked. */
async function openDataDir(
  config: Config,
  options: OpenBackendsOptions<BackendNeeds>,
  opened: Opened,
): Promise<void> {
  const dataDir = config.dataDir!;
  if (options.dataDir === "create") {
    // Created 0700 if missing; tightened only once the lock is ours (a second server
    // must change nothing).
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  } else {
    await requireExisting(config, options.needs);
  }
  if (options.lock === "hold") opened.lock = await lockDirectory(dataDir);
  if (options.lock === "try") {
    // A directory only read is locked without writing (or not at all: no lock file yet).
    const lock = options.dataDir === "read-only" ? lockDirectoryReadOnly : lockDirectory;
    opened.lock = await lock(dataDir).catch((error) => {
      if (!(error instanceof DirectoryLockedError)) throw error;
      opened.lockHeldElsewhere = error.message;
      return null;
    });
  }
  if (options.dataDir === "create") {
    // Behind nginx with the offload, its workers pass through to the pieces (kernel/data_dir.ts).
    const groupMayEnter = config.xAccelRedirect !== null && config.store === "disk";
    await makePrivateDirectory(dataDir, options.logger, { groupMayEnter });
  }
}

/** What the caller needs from the directory must be there already. */
async function requireExisting(config: Config, needs: BackendNeeds): Promise<void> {
  const paths = dataDirPaths(config.dataDir!);
  if (
    needs.metadata !== false && config.databaseUrl === null && !await pathExists(paths.database)
  ) {
    throw new ConfigError(`No database at ${paths.database}: check --data-dir`);
  }
  if (needs.store && config.store === "disk" && !await pathExists(paths.pieces)) {
    throw new ConfigError(`No pieces directory at ${paths.pieces}: check --data-dir`);
  }
}

async function openStore(
  config: Config,
  access: DataDirAccess,
  writer: string | undefined,
): Promise<PieceStore> {
  if (config.store === "s3") return await openS3Store(config, { writer });
  const root = dataDirPaths(config.dataDir!).pieces;
  if (access !== "create") return new DiskStore({ root });
  // nginx's workers read the pieces themselves with --x-accel-redirect: share them (only them).
  return await DiskStore.create({ root, shareWithGroup: config.xAccelRedirect !== null });
}

/** The database (PostgreSQL is open already), and the records over it when asked for. */
async function openMetadata(
  config: Config,
  options: OpenBackendsOptions<BackendNeeds>,
  opened: Opened,
): Promise<void> {
  const records = options.needs.metadata === "records";
  if (opened.postgres !== null) {
    if (records) opened.metadata = postgresMetadata(opened.postgres);
    return;
  }
  const path = dataDirPaths(config.dataDir!).database;
  if (options.dataDir === "create") await makePrivateDatabaseFiles(path);
  opened.sqlite = options.dataDir === "read-only"
    // The schema as it is (a backup brings its copy up to date): migrating would write.
    ? openDatabaseReadOnly(path)
    : openDatabase({ path, busyTimeoutMs: config.dbBusyTimeoutMs });
  opened.dbPath = path;
  if (records) opened.metadata = sqliteMetadata({ db: opened.sqlite, clock: options.clock, path });
}

/**
 * The operator's key file when named (every instance reads the same file);
 * else, with PostgreSQL, the database's; else the data directory's hmac.key,
 * made on first use where the directory is made.
 */
function keyPlaceOf(
  config: Config,
  access: DataDirAccess,
  postgres: PostgresDatabase | null,
): HmacKeyPlace | null {
  if (config.hmacKeyFile !== null) {
    return keyFilePlace(config.hmacKeyFile, { createIfMissing: false });
  }
  if (config.databaseUrl !== null) return sharedKeyPlace(postgres!.hmacKeys);
  const path = keyFilePath({ dataDir: config.dataDir, keyFile: null });
  return path === null ? null : keyFilePlace(path, { createIfMissing: access === "create" });
}

/**
 * The bucket of --store s3. Loaded only when asked for: the single-box
 * default never loads the S3 client.
 */
export async function openS3Store(
  config: Config,
  options: { writer?: string } = {},
): Promise<PieceStore> {
  const { S3Store } = await import("../driver/s3/s3_store.ts");
  const s3 = config.s3!;
  return new S3Store({
    endpoint: s3.endpoint,
    bucket: s3.bucket,
    region: s3.region,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    source: s3.sourceLabel,
    requestTimeoutMs: config.s3TimeoutMs,
    writer: options.writer,
  });
}

async function openOffline(reason: string, clock: Clock): Promise<Opened> {
  const db = openDatabase({ path: ":memory:" });
  const metadata = sqliteMetadata({ db, clock, path: null });
  return {
    // Tokens cannot be issued without a persistent database; this key verifies nothing.
    hmacKey: await HmacKey.open({ path: null, createIfMissing: false }),
    keyPlace: null,
    hmacKeyWhere: null,
    metadata,
    sqlite: db,
    store: new UnboundStore(reason),
    dbPath: null,
    postgres: null,
    lock: null,
    lockHeldElsewhere: null,
    close: () => metadata.close(),
  };
}
