/**
 * Everything the service keeps besides the bytes, behind one object the
 * composition root builds: the records, the daily-cap ledger, the per-cid
 * commit locks, the turn of garbage-collection sweeps (their ports are all
 * declared in domain/), and the database's health. Two backends:
 *
 * - SQLite in the data directory (the default): one process owns it, so cap
 *   reservations, cid locks and the sweep turn live in that process's memory.
 * - PostgreSQL (`--database postgres://…`): shared by N instances, so cap
 *   reservations, cid locks and the sweep turn live in the database too
 *   (db/postgres/).
 */
import type { Clock } from "../kernel/clock.ts";
import type { BlockRecords, CatalogRecords } from "../domain/catalog_records.ts";
import type { LifecycleRecords } from "../domain/lifecycle_records.ts";
import type { ResumableUploadRecords } from "../domain/resumable_upload_records.ts";
import type {
  SessionRecords,
  SignupCodeRecords,
  TokenRecords,
  UploadLinkRecords,
  WalletNonceRecords,
} from "../domain/auth_records.ts";
import type { Database } from "../db/sqlite/database.ts";
import { SqliteBlockRecords } from "../db/sqlite/block_records.ts";
import { SqliteCatalogRecords } from "../db/sqlite/catalog_records.ts";
import { SqliteLifecycleRecords } from "../db/sqlite/lifecycle_records.ts";
import { SqliteSignupCodeRecords } from "../db/sqlite/signup_code_records.ts";
import { SqliteTokenRecords } from "../db/sqlite/token_records.ts";
import { SqliteWalletNonceRecords } from "../db/sqlite/wallet_nonce_records.ts";
import { SqliteSessionRecords } from "../db/sqlite/session_records.ts";
import { SqliteUploadLinkRecords } from "../db/sqlite/upload_link_records.ts";
import { SqliteResumableUploadRecords } from "../db/sqlite/resumable_upload_records.ts";
import type { PostgresDatabase } from "../db/postgres/postgres_database.ts";
import { DailyCapLedger } from "../limits/daily_caps.ts";
import type { CapLedger } from "../domain/cap_ledger.ts";
import { LocalCidLocks } from "../catalog/cid_locks.ts";
import type { CidLocks, SweepTurn } from "../domain/locks.ts";
import type { HandoffRecords } from "../domain/handoff_records.ts";
import { SqliteHandoffRecords } from "../db/sqlite/handoff_records.ts";
import { LocalSweepTurn } from "../catalog/sweep_turn.ts";
import type { DatabaseHealth } from "../kernel/health_wire.ts";

export type MetadataBackend = "sqlite" | "postgres";

export interface Metadata {
  readonly backend: MetadataBackend;
  readonly catalog: CatalogRecords;
  /** The block index of CAR uploads, for the IPFS gateway. */
  readonly blocks: BlockRecords;
  /** Deal ends, removals, manifest listings, the last sweep (garbage collection). */
  readonly lifecycle: LifecycleRecords;
  readonly tokens: TokenRecords;
  readonly signupCodes: SignupCodeRecords;
  readonly walletNonces: WalletNonceRecords;
  readonly sessions: SessionRecords;
  readonly uploadLinks: UploadLinkRecords;
  readonly resumableUploads: ResumableUploadRecords;
  readonly capLedger: CapLedger;
  readonly cidLocks: CidLocks;
  /** One garbage-collection sweep at a time, in every process that shares the records. */
  readonly sweepTurn: SweepTurn;
  /** Where each piece stands with the storage provider (src/handoff/). */
  readonly handoffs: HandoffRecords;
  /** One hand-off run at a time, in every process that shares the records. */
  readonly handoffTurn: SweepTurn;
  /** False for the in-memory SQLite a server without a usable data directory runs on. */
  readonly persistent: boolean;
  /**
   * With a shared database: the instances known alive, and the instant before
   * which a leftover of any other instance is surely a dead one's (the piece
   * store's cleanup takes them). Null when this process is the only writer.
   */
  readonly liveWriters: (() => Promise<{ live: ReadonlySet<string>; before: number }>) | null;
  health(): Promise<DatabaseHealth>;
  /** Stops background work (heartbeats) and closes connections. */
  close(): Promise<void>;
}

export interface SqliteMetadataOptions {
  db: Database;
  clock: Clock;
  /** The database file, stat'ed by health(): SQLite keeps writing to a deleted file. */
  path: string | null;
}

export function sqliteMetadata(options: SqliteMetadataOptions): Metadata {
  const { db, clock, path } = options;
  const blocks = new SqliteBlockRecords(db);
  const catalog = new SqliteCatalogRecords(db, blocks);
  const persistent = path !== null;
  return {
    backend: "sqlite",
    catalog,
    blocks,
    lifecycle: new SqliteLifecycleRecords(db),
    tokens: new SqliteTokenRecords(db),
    signupCodes: new SqliteSignupCodeRecords(db),
    walletNonces: new SqliteWalletNonceRecords(db),
    sessions: new SqliteSessionRecords(db),
    uploadLinks: new SqliteUploadLinkRecords(db),
    resumableUploads: new SqliteResumableUploadRecords(db),
    capLedger: new DailyCapLedger({
      clock,
      usedBytes: (subject, day) => catalog.usedBytesNow(subject, day),
    }),
    cidLocks: new LocalCidLocks(),
    sweepTurn: new LocalSweepTurn(),
    handoffs: new SqliteHandoffRecords(db),
    handoffTurn: new LocalSweepTurn(),
    persistent,
    liveWriters: null,
    // deno-lint-ignore require-await -- node:sqlite answers at once; async turns a throw into a rejection.
    health: async () => {
      try {
        db.prepare("SELECT 1").get();
        if (path) Deno.statSync(path);
        return {
          ok: true,
          persistent,
          backend: "sqlite",
          detail: persistent ? "sqlite" : "in-memory: no data directory bound",
        };
      } catch (error) {
        return { ok: false, persistent, backend: "sqlite", detail: (error as Error).message };
      }
    },
    // deno-lint-ignore require-await -- closing node:sqlite is synchronous.
    close: async () => db.close(),
  };
}

/**
 * Metadata in a PostgreSQL database that other instances share. Commits of
 * one cid queue in this process first, so only one of them at a time waits
 * for the database's lock.
 */
export function postgresMetadata(postgres: PostgresDatabase): Metadata {
  const local = new LocalCidLocks();
  return {
    backend: "postgres",
    catalog: postgres.catalog,
    blocks: postgres.blocks,
    lifecycle: postgres.lifecycle,
    tokens: postgres.tokens,
    signupCodes: postgres.signupCodes,
    walletNonces: postgres.walletNonces,
    sessions: postgres.sessions,
    uploadLinks: postgres.uploadLinks,
    resumableUploads: postgres.resumableUploads,
    capLedger: postgres.capLedger,
    cidLocks: {
      run: (cid, fn) => local.run(cid, () => postgres.cidLocks.run(cid, fn)),
      runAll: (cids, fn) => local.runAll(cids, () => postgres.cidLocks.runAll(cids, fn)),
    },
    sweepTurn: postgres.sweepTurn,
    handoffs: postgres.handoffs,
    handoffTurn: postgres.handoffTurn,
    persistent: true,
    liveWriters: () => postgres.liveWriters(),
    health: async () => ({ ...await postgres.health(), persistent: true, backend: "postgres" }),
    close: () => postgres.close(),
  };
}
