/**
 * The PostgreSQL backend: connects, brings the schema up to date, registers
 * this instance (instances.ts) and hands out the records, the cap ledger, the
 * cid locks, the shared HMAC key and the operator's row copies, all over one
 * connection pool (plus a small pool that only holds cid locks). Both pools
 * share one judgement of whether the database answers at all (kernel/liveness.ts):
 * while it does not, every call fails at once as DatabaseUnavailableError,
 * and /healthz says so; the heartbeat, the corrupt-mark poll and requests
 * probe it again, so the instance comes back by itself.
 *
 * Migrations run in one transaction under an advisory lock, so N instances
 * starting at once migrate once; a schema newer than this build is refused
 * (DatabaseTooNewError), as with SQLite.
 */
import { systemClock } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import { Liveness } from "../../kernel/liveness.ts";
import type { Logger } from "../../kernel/log.ts";
import { DatabaseTooNewError } from "../too_new.ts";
import { PostgresCapLedger } from "./cap_ledger.ts";
import { PostgresBlockRecords } from "./block_records.ts";
import { PostgresCatalogRecords } from "./catalog_records.ts";
import { PostgresCidLocks } from "./cid_locks.ts";
import { databaseProbe, PostgresPool, whereOf } from "./connection.ts";
import type { Sql } from "./connection.ts";
import { PostgresHandoffRecords } from "./handoff_records.ts";
import { PostgresHmacKeys } from "./hmac_keys.ts";
import { PostgresRsaKeys } from "./rsa_keys.ts";
import { PostgresLifecycleRecords } from "./lifecycle_records.ts";
import { PostgresSweepTurn } from "./sweep_turn.ts";
import { InstanceHeartbeat } from "./instances.ts";
import { POSTGRES_MIGRATIONS } from "./migrations.ts";
import type { PostgresMigration } from "./migrations.ts";
import { PostgresResumableUploadRecords } from "./resumable_upload_records.ts";
import { PostgresRowTarget, readSnapshot } from "./row_copy.ts";
import type { RowSource, SnapshotSource } from "../row_copy.ts";
import { PostgresSignupCodeRecords } from "./signup_code_records.ts";
import { PostgresTokenRecords } from "./token_records.ts";
import { DatabaseUnavailableError } from "./unavailable.ts";
import { PostgresWalletNonceRecords } from "./wallet_nonce_records.ts";
import { PostgresSessionRecords } from "./session_records.ts";
import { PostgresUploadLinkRecords } from "./upload_link_records.ts";

/** PostgreSQL could not be reached (or refused us) at start: the instance must not serve. */
export class PostgresUnavailableError extends Error {
  constructor(where: string, cause: unknown) {
    super(`Cannot use PostgreSQL at ${where}: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
    this.name = "PostgresUnavailableError";
  }
}

export interface PostgresDatabaseOptions {
  url: string;
  logger: Logger;
  clock?: Clock;
  /** Connections for queries (default 10). */
  maxConnections?: number;
  /** Connections that may hold cid locks at once (default 4). */
  maxLockConnections?: number;
  /** Bound of every call: connection, statement, transaction (--db-timeout; default 5 s). */
  timeoutMs?: number;
  /** How often this instance says it is alive (default 5 s). */
  heartbeatMs?: number;
  /** Silence after which an instance is taken for dead and its reservations released (default 30 s). */
  deadAfterMs?: number;
  migrations?: readonly PostgresMigration[];
}

/** An arbitrary constant: the advisory lock that serialises migrations. */
const MIGRATION_LOCK_KEY = 0x5354_4f52;
/** Another: the hand-off's turn ("HAND"), apart from the sweep's. */
const HANDOFF_LOCK_KEY = 0x4841_4e44;
/** Instances starting together wait for each other's migration: longer than a call. */
const MIGRATION_TIMEOUT_MS = 60_000;
const HEALTH_TIMEOUT_MS = 1000;
export const DEFAULT_DB_TIMEOUT_MS = 5000;

export class PostgresDatabase implements SnapshotSource {
  readonly instanceId: string;
  readonly catalog: PostgresCatalogRecords;
  readonly blocks: PostgresBlockRecords;
  readonly lifecycle: PostgresLifecycleRecords;
  readonly tokens: PostgresTokenRecords;
  readonly signupCodes: PostgresSignupCodeRecords;
  readonly walletNonces: PostgresWalletNonceRecords;
  readonly sessions: PostgresSessionRecords;
  readonly uploadLinks: PostgresUploadLinkRecords;
  readonly resumableUploads: PostgresResumableUploadRecords;
  readonly capLedger: PostgresCapLedger;
  readonly cidLocks: PostgresCidLocks;
  /** One garbage-collection sweep at a time across instances. */
  readonly sweepTurn: PostgresSweepTurn;
  readonly hmacKeys: PostgresHmacKeys;
  /** The RSA keys of --token-alg RS256, which every instance signs and verifies with. */
  readonly rsaKeys: PostgresRsaKeys;
  /** The hand-off to a PDP provider: where each piece stands there, the calls, the data set. */
  readonly handoffs: PostgresHandoffRecords;
  /** One instance hands off at a time. */
  readonly handoffTurn: PostgresSweepTurn;
  /** Where a migration writes the rows it copies (db/row_copy.ts). */
  readonly rowTarget: PostgresRowTarget;
  /** Host, port and database name (no credentials), for /healthz and logs. */
  readonly where: string;
  readonly #pool: PostgresPool;
  readonly #locks: PostgresPool;
  readonly #liveness: Liveness;
  readonly #heartbeat: InstanceHeartbeat;
  readonly #deadAfterMs: number;
  #closed: Promise<void> | null = null;

  static async open(options: PostgresDatabaseOptions): Promise<PostgresDatabase> {
    const database = new PostgresDatabase(options);
    try {
      await migrate(database.#pool.sql, options.migrations ?? POSTGRES_MIGRATIONS);
      await database.#heartbeat.start();
    } catch (error) {
      await database.close();
      if (error instanceof DatabaseTooNewError) throw error;
      throw new PostgresUnavailableError(database.where, error);
    }
    return database;
  }

  private constructor(options: PostgresDatabaseOptions) {
    this.instanceId = crypto.randomUUID();
    this.where = whereOf(options.url);
    const timeoutMs = options.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS;
    this.#liveness = new Liveness({
      where: `PostgreSQL at ${this.where}`,
      probe: databaseProbe(options.url),
      failure: (message) => new DatabaseUnavailableError(message),
      // A probe makes a connection of its own: allow it the call deadline, up to 2 s.
      probeTimeoutMs: Math.min(timeoutMs, 2000),
    });
    const pool = (max: number) =>
      new PostgresPool({ url: options.url, max, timeoutMs, liveness: this.#liveness });
    this.#pool = pool(options.maxConnections ?? 10);
    this.#locks = pool(options.maxLockConnections ?? 4);
    const sql = this.#pool.sql;
    this.catalog = new PostgresCatalogRecords(sql);
    this.blocks = new PostgresBlockRecords(sql);
    this.lifecycle = new PostgresLifecycleRecords(sql);
    this.tokens = new PostgresTokenRecords(sql);
    this.signupCodes = new PostgresSignupCodeRecords(sql);
    this.walletNonces = new PostgresWalletNonceRecords(sql);
    this.sessions = new PostgresSessionRecords(sql);
    this.uploadLinks = new PostgresUploadLinkRecords(sql);
    this.resumableUploads = new PostgresResumableUploadRecords(sql);
    this.capLedger = new PostgresCapLedger({
      sql,
      clock: options.clock ?? systemClock,
      instanceId: this.instanceId,
    });
    this.cidLocks = new PostgresCidLocks({ locks: this.#locks, timeoutMs });
    this.sweepTurn = new PostgresSweepTurn({ locks: this.#locks, timeoutMs });
    this.hmacKeys = new PostgresHmacKeys(sql);
    this.rsaKeys = new PostgresRsaKeys(sql, this.where);
    this.handoffs = new PostgresHandoffRecords(sql);
    this.handoffTurn = new PostgresSweepTurn({
      locks: this.#locks,
      timeoutMs,
      key: HANDOFF_LOCK_KEY,
    });
    this.rowTarget = new PostgresRowTarget(sql);
    this.#deadAfterMs = options.deadAfterMs ?? 30_000;
    this.#heartbeat = new InstanceHeartbeat({
      sql,
      instanceId: this.instanceId,
      heartbeatMs: options.heartbeatMs ?? 5_000,
      deadAfterMs: this.#deadAfterMs,
      logger: options.logger,
      onBeat: () => this.capLedger.retryReleases(),
    });
  }

  /** The query pool, for tests and the migrate command. */
  get sql(): Sql {
    return this.#pool.sql;
  }

  /**
   * The instances alive now (rows in `instances`), and the instant before which
   * anything another instance wrote is surely from a dead one: an instance is
   * removed only after deadAfterMs of silence, and one that registers after
   * this read writes nothing before it (the margin also covers clock skew).
   */
  async liveWriters(): Promise<{ live: ReadonlySet<string>; before: number }> {
    const before = Date.now() - this.#deadAfterMs;
    const rows = await this.#pool.sql`SELECT id FROM instances`;
    return { live: new Set(rows.map((row) => row.id as string)), before };
  }

  /** Reads the copied tables as of one instant (a backup's source; db/row_copy.ts). */
  snapshot<T>(read: (rows: RowSource) => Promise<T>): Promise<T> {
    return readSnapshot(this.#pool.sql, read);
  }

  /**
   * Whether a trivial query answers within a second; at once "no" while the
   * database is known not to answer (with why, and since when).
   */
  async health(): Promise<{ ok: boolean; detail: string }> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        this.#pool.sql`SELECT 1`,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)),
            HEALTH_TIMEOUT_MS,
          );
        }),
      ]);
      return { ok: true, detail: `postgres at ${this.where}` };
    } catch (error) {
      return { ok: false, detail: `postgres at ${this.where}: ${(error as Error).message}` };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops the heartbeat (releasing this instance's reservations) and closes both pools. */
  close(): Promise<void> {
    return this.#closed ??= (async () => {
      await this.#heartbeat.stop();
      await Promise.all([this.#pool.end(), this.#locks.end()]);
    })();
  }
}

/** Applies the migrations newer than the recorded version, all in one locked transaction. */
async function migrate(sql: Sql, migrations: readonly PostgresMigration[]): Promise<void> {
  const latest = migrations.at(-1)?.version ?? 0;
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_version (
      id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`;
    const [row] = await tx`SELECT version FROM schema_version WHERE id = 1`;
    const current = Number(row?.version ?? 0);
    if (current > latest) throw new DatabaseTooNewError(current, latest);
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await tx.unsafe(migration.sql);
    }
    if (latest > current) {
      await tx`INSERT INTO schema_version (id, version) VALUES (1, ${latest})
        ON CONFLICT (id) DO UPDATE SET version = excluded.version`;
    }
  }, { timeoutMs: MIGRATION_TIMEOUT_MS });
}
