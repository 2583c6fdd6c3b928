/**
 * A consistent copy of a deployment, made while its servers run: always a
 * standalone data directory (SQLite and pieces on disk) that
 * `main.ts --data-dir DEST` serves as it is, whether the live metadata is in
 * the data directory's SQLite or in PostgreSQL, and the pieces on disk or in
 * a bucket.
 *
 * Consistency comes from the order. The metadata is copied first, as one
 * snapshot: SQLite's online backup (all pages in one step under one read
 * transaction; the WAL is read like any reader reads it), or PostgreSQL's
 * rows read in one REPEATABLE READ transaction into a new SQLite database
 * (db/row_copy.ts; pending signup codes and sign-in nonces, which live
 * minutes, are not among them). Then exactly the pieces that snapshot names
 * are copied. That is enough because a piece row is written only after its
 * bytes are durable in the store, and stored bytes never change afterwards
 * (a repair writes the same right bytes over corrupt ones), so every piece
 * the snapshot names is there, complete, for as long as the copy takes.
 * Uploads finishing meanwhile are not in the snapshot and not copied: the
 * copy is the state of one instant. Nothing live is written: SQLite is
 * opened read-only (it may create its -wal and -shm files when no server
 * has it open), PostgreSQL read in a READ ONLY transaction, the store only
 * read, and no lock is taken.
 *
 * Each piece goes through the driver interface (ops/piece_copy.ts): checked
 * for its recorded size and SHA-256, fsynced and renamed into place as
 * uploads are. The database is written as storage.db.partial and renamed to
 * storage.db last, so a directory with a storage.db is a finished backup.
 */
import { dataDirPaths, KEY_FILE, makePrivateDatabaseFiles } from "../kernel/data_dir.ts";
import { openDatabase, snapshotDatabase } from "../db/sqlite/database.ts";
import type { Database } from "../db/sqlite/database.ts";
import { SqliteCatalogRecords } from "../db/sqlite/catalog_records.ts";
import { SqliteRowTarget } from "../db/sqlite/row_copy.ts";
import type { SnapshotSource } from "../db/row_copy.ts";
import { writeFileAtomic } from "../kernel/fs/atomic_write.ts";
import { joinPath, syncDirectory } from "../kernel/fs/files.ts";
import { DiskStore } from "../driver/disk/disk_store.ts";
import type { PieceStore } from "../driver/driver.ts";
import { copyPiece } from "./piece_copy.ts";
import { eachPiece, forEachConcurrently } from "./piece_pages.ts";
import { copyPieceRows, copyTables } from "./table_copy.ts";

/** Pieces copied at once: enough to overlap the fsyncs of small files. */
const DEFAULT_CONCURRENCY = 8;
/** Rows read at a time, from the copied database or from the live one. */
const PAGE_SIZE = 512;
const MIB = 1024 * 1024;

/** Where the live metadata is, and so how its snapshot is taken. */
export type LiveMetadata =
  /** The data directory's SQLite, opened read-only: copied page by page in one step. */
  | { kind: "sqlite"; db: Database }
  /** A shared database: its rows read in one snapshot into a new SQLite database. */
  | { kind: "rows"; database: SnapshotSource };

export interface BackupOptions {
  metadata: LiveMetadata;
  /** The live piece store; only read. */
  store: PieceStore;
  /** The token signing key in force (hex), written as <destination>/hmac.key; null: none. */
  keyHex: string | null;
  /** The RSA key ring of --token-alg RS256 (its file's text), written as <destination>/rsa-keys.json. */
  rsaKeysText?: string | null;
  /** The backup's directory: it exists, empty and private (0700). */
  destination: string;
  /** Pieces copied at once (default 8). */
  concurrency?: number;
}

export interface BackupSummary {
  destination: string;
  /** Pieces copied. */
  pieces: number;
  /** Bytes of the pieces copied. */
  bytes: number;
  databaseBytes: number;
  /** Whether the key was copied (tokens work against the backup only with it). */
  hmacKey: boolean;
  /** Present when the RSA keys of --token-alg RS256 were copied too. */
  rsaKeys?: true;
  /** Pieces the database names whose bytes the live store does not have. */
  missing: string[];
  /** Pieces that could not be copied as recorded (another size, other bytes, a read error). */
  failed: { cid: string; problem: string }[];
  seconds: number;
  /** (bytes + databaseBytes) per second, in MiB. */
  mibPerSecond: number;
}

export async function backupDeployment(options: BackupOptions): Promise<BackupSummary> {
  const started = performance.now();
  const paths = dataDirPaths(options.destination);
  const partial = `${paths.database}.partial`;
  await makePrivateDatabaseFiles(partial);
  await snapshotMetadata(options.metadata, partial);
  const databaseBytes = (await Deno.stat(partial)).size;
  const summary: BackupSummary = {
    destination: options.destination,
    pieces: 0,
    bytes: 0,
    databaseBytes,
    hmacKey: false,
    missing: [],
    failed: [],
    seconds: 0,
    mibPerSecond: 0,
  };
  // The copy is read through the current schema: an older one is migrated (as the server
  // would at its start), a newer one refused (DatabaseTooNewError) before a piece is copied.
  const copy = openDatabase({ path: partial });
  try {
    const target = await DiskStore.create({ root: paths.pieces });
    await copyPieces(new SqliteCatalogRecords(copy), options, target, summary);
  } finally {
    copy.close();
  }
  if (options.keyHex !== null) {
    const key = new TextEncoder().encode(`${options.keyHex}\n`);
    const keyFile = joinPath(options.destination, KEY_FILE);
    await writeFileAtomic(keyFile, key, { mode: 0o600, ifExists: "fail" });
    summary.hmacKey = true;
  }
  if (options.rsaKeysText) {
    await writeFileAtomic(paths.rsaKeysFile, new TextEncoder().encode(options.rsaKeysText), {
      mode: 0o600,
      ifExists: "fail",
    });
    summary.rsaKeys = true;
  }
  await syncFile(partial);
  await Deno.rename(partial, paths.database);
  await syncDirectory(options.destination);
  const ms = Math.max(performance.now() - started, 1);
  summary.seconds = Math.round(ms) / 1000;
  summary.mibPerSecond = Math.round((summary.bytes + databaseBytes) / MIB / (ms / 1000) * 10) / 10;
  summary.missing.sort();
  summary.failed.sort((a, b) => a.cid < b.cid ? -1 : 1);
  return summary;
}

/** One snapshot of the live metadata into the SQLite database file at `target` (0600). */
async function snapshotMetadata(live: LiveMetadata, target: string): Promise<void> {
  if (live.kind === "sqlite") return await snapshotDatabase(live.db, target);
  const copy = openDatabase({ path: target });
  try {
    const rowTarget = new SqliteRowTarget(copy);
    await live.database.snapshot(async (rows) => {
      await copyPieceRows(rows, rowTarget, { chunkRows: PAGE_SIZE });
      await copyTables(rows, rowTarget, { chunkRows: PAGE_SIZE });
    });
  } finally {
    copy.close();
  }
}

async function copyPieces(
  copy: SqliteCatalogRecords,
  options: BackupOptions,
  target: PieceStore,
  summary: BackupSummary,
): Promise<void> {
  await forEachConcurrently(
    eachPiece(copy, PAGE_SIZE),
    { concurrency: options.concurrency ?? DEFAULT_CONCURRENCY },
    async (piece) => {
      // A piece a sweep removed has no bytes: its row says so in the copy too.
      if (piece.removedAt !== null) return;
      // Every byte is read anyway: hashing them on the way keeps a rotted piece (one no
      // scrub has marked yet) out of the copy that is meant to repair it.
      const size = Number(piece.size);
      const outcome = await copyPiece({ ...piece, size }, {
        source: options.store,
        target,
        skipPresent: false,
      });
      if (outcome.kind === "copied") {
        summary.pieces++;
        summary.bytes += size;
      } else if (outcome.kind === "missing") {
        summary.missing.push(piece.cid);
      } else if (outcome.kind === "failed") {
        summary.failed.push({
          cid: piece.cid,
          problem: outcome.corrupt
            ? `${outcome.reason} (corrupt in the live store: run scrub, and restore the piece ` +
              "from an older backup)"
            : outcome.reason,
        });
      }
    },
  );
}

async function syncFile(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true, write: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}
