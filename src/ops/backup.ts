/**
 * A consistent copy of a data directory, made while its server runs.
 *
 * Consistency comes from the order. The database is copied first, as one
 * snapshot (SQLite's online backup, all pages in one step under one read
 * transaction; the WAL is read like any reader reads it). Then exactly the
 * pieces that snapshot names are copied. That is enough because a piece row
 * is written only after its file is durable in its shard, and a stored file
 * never changes afterwards (a repair renames the same right bytes over a
 * corrupt file), so every file the snapshot names is there, complete, for as
 * long as the copy takes. Uploads finishing meanwhile are not in the snapshot
 * and not copied: the copy is the state of one instant. Nothing of the live
 * directory is written: the source database is opened read-only (SQLite may
 * create its -wal and -shm files when no server has it open), the source
 * store only opened for reading, and no lock is taken (the server holds
 * serve.lock).
 *
 * The copy goes through the driver interface (open on the live store, stage
 * and commit on the backup's): each file is size-checked, fsynced, and
 * renamed into place as uploads are. The database copy is written as
 * storage.db.partial and renamed to storage.db last, so a directory with a
 * storage.db is a finished backup.
 */
import { backup as sqliteBackup, DatabaseSync } from "node:sqlite";
import { dataDirPaths, KEY_FILE, makePrivateDatabaseFiles } from "../data_dir.ts";
import { openDatabase } from "../db/sqlite/database.ts";
import { SqliteCatalogRecords } from "../db/sqlite/catalog_records.ts";
import type { CatalogRecords } from "../db/records.ts";
import { writeFileAtomic } from "../fs/atomic_write.ts";
import { joinPath, syncDirectory } from "../fs/files.ts";
import { DiskStore } from "../storage/driver/disk/disk_store.ts";
import { StoreError } from "../storage/driver/driver.ts";
import type { PieceStore } from "../storage/driver/driver.ts";

/** Pieces copied at once: enough to overlap the fsyncs of small files. */
const DEFAULT_CONCURRENCY = 8;
/** Rows read from the copied database at a time. */
const PAGE_SIZE = 512;
const MIB = 1024 * 1024;

export interface BackupOptions {
  /** The live database file; opened read-only. */
  databasePath: string;
  /** The live piece store; only read. */
  source: PieceStore;
  /** The token signing key in use; copied as <destination>/hmac.key. Null: there is none. */
  keyFile: string | null;
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
  /** Whether the key file was copied (tokens work against the backup only with it). */
  hmacKey: boolean;
  /** Pieces the database names whose file the live store does not have. */
  missing: string[];
  /** Pieces whose file could not be copied as recorded (a size that differs, a read error). */
  failed: { cid: string; problem: string }[];
  seconds: number;
  /** (bytes + databaseBytes) per second, in MiB. */
  mibPerSecond: number;
}

export async function backupDataDir(options: BackupOptions): Promise<BackupSummary> {
  const started = performance.now();
  const paths = dataDirPaths(options.destination);
  const partial = `${paths.database}.partial`;
  const databaseBytes = await copyDatabase(options.databasePath, partial);
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
  summary.hmacKey = await copyKeyFile(options.keyFile, joinPath(options.destination, KEY_FILE));
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

/** One snapshot of the live database into target (created 0600); returns its size. */
async function copyDatabase(source: string, target: string): Promise<number> {
  const live = new DatabaseSync(source, { readOnly: true });
  try {
    await makePrivateDatabaseFiles(target);
    // rate -1: every page in one step, under one read transaction. In steps, a write by
    // the server between two of them would restart the copy, over and over under load.
    await sqliteBackup(live, target, { rate: -1 });
  } finally {
    live.close();
  }
  return (await Deno.stat(target)).size;
}

async function copyPieces(
  copy: CatalogRecords,
  options: BackupOptions,
  target: PieceStore,
  summary: BackupSummary,
): Promise<void> {
  const queue = piecesOf(copy);
  // The first error stops every worker from taking another piece, and the copy is given up
  // only once all of them are done: nothing is written into DEST after it is removed.
  let stopped = false;
  const worker = async () => {
    try {
      for (let next = await queue.next(); !stopped && !next.done; next = await queue.next()) {
        await copyPiece(next.value, options.source, target, summary);
      }
    } catch (error) {
      stopped = true;
      throw error;
    }
  };
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const results = await Promise.allSettled(Array.from({ length: concurrency }, worker));
  const failure = results.find((result) => result.status === "rejected");
  if (failure) throw failure.reason;
}

/**
 * Every piece of the copied database, a page of rows at a time, shared by the
 * workers (an async generator answers concurrent next() calls in turn).
 */
async function* piecesOf(copy: CatalogRecords): AsyncGenerator<PieceToCopy> {
  let cursor = "";
  for (let page; (page = await copy.piecesAfter(cursor, PAGE_SIZE)).length > 0;) {
    for (const piece of page) {
      yield { cid: piece.cid, size: Number(piece.size), sha256: piece.sha256 };
    }
    cursor = page.at(-1)!.cid;
  }
}

/** A piece the copied database names, with the digest its bytes must have (when known). */
interface PieceToCopy {
  cid: string;
  size: number;
  sha256: string | null;
}

async function copyPiece(
  piece: PieceToCopy,
  source: PieceStore,
  target: PieceStore,
  summary: BackupSummary,
): Promise<void> {
  const opened = await source.open(piece.cid);
  if (opened === null) {
    summary.missing.push(piece.cid);
    return;
  }
  let staged;
  try {
    // Every byte is read anyway: hashing them on the way keeps a rotted piece (one no scrub
    // has marked yet) out of the copy that is meant to repair it.
    staged = await target.stage(opened.body, {
      expectedBytes: piece.size,
      computeSha256: piece.sha256 !== null,
    });
  } catch (error) {
    // Staging stops reading at the first byte too many: close the file behind it.
    await opened.body.cancel().catch(() => {});
    const unlikeRecorded = error instanceof StoreError &&
      (error.failure === "short_body" || error.failure === "long_body");
    if (!unlikeRecorded) throw error;
    summary.failed.push({
      cid: piece.cid,
      problem: opened.size === piece.size
        ? `cannot read it: ${error.message}`
        : `the file has ${opened.size} bytes, the database records ${piece.size}`,
    });
    return;
  }
  if (piece.sha256 !== null && staged.sha256 !== piece.sha256) {
    await staged.discard();
    summary.failed.push({
      cid: piece.cid,
      problem: "its bytes do not match their recorded SHA-256 (corrupt on disk: run scrub, and " +
        "restore the piece from an older backup)",
    });
    return;
  }
  await staged.commit(piece.cid);
  summary.pieces++;
  summary.bytes += piece.size;
}

/** Copies the key file (0600, atomically); false when there is none to copy. */
async function copyKeyFile(source: string | null, target: string): Promise<boolean> {
  if (source === null) return false;
  let key: Uint8Array;
  try {
    key = await Deno.readFile(source);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
  await writeFileAtomic(target, key, { mode: 0o600, ifExists: "fail" });
  return true;
}

async function syncFile(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true, write: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}
