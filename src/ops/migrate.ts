/**
 * Moves a single-box data directory into the scale-out backends: its pieces
 * into another piece store (a bucket, or a new directory), its rows into
 * PostgreSQL. It holds no SQL and knows no driver: the pieces go through the
 * PieceStore interface (ops/piece_copy.ts), the rows through a RowSource and
 * a RowTarget (db/row_copy.ts; the data directory's SQLite reads them,
 * db/postgres/row_copy.ts writes them and says how a rerun treats a row
 * already there).
 *
 * Resumable, because a migration of terabytes is interrupted, and because the
 * operator runs it first while the old server still serves and once more
 * after stopping it:
 *
 * - a piece whose key the target store already holds with the recorded size
 *   is skipped (neither read nor hashed again);
 * - a row already in the target is left alone or brought forwards, never
 *   back (a revocation, a longer term, a grown counter, a digest that became
 *   known), so a rerun inserts only rows that are new since the last run.
 *
 * Order keeps the invariant the service relies on: an instance serving from
 * the targets never sees a piece row without its bytes. A piece's row is
 * written only after its bytes were committed to (or found in) the target
 * store; deals and corrupt marks only for pieces whose row is there (the
 * others are counted as deferred and come with the next run).
 *
 * A copied piece is hashed on the way; when the source recorded a SHA-256,
 * bytes that differ are refused (not copied, named as failed) — a migration
 * must not spread bit rot into the store that replaces the disk. A piece the
 * source has already marked corrupt (a scrub found it wrong) and whose bytes
 * still do not verify is carried as the source serves it: its row and mark
 * without bytes, answering 503 piece_corrupt, repairable by an upload of the
 * right bytes on the targets as on the source. A piece a sweep removed in the
 * source (no deal kept it) has no bytes to move: its row travels with its
 * removal (the targets answer 410 gone for it, as the source does).
 *
 * Not copied: signup codes and wallet sign-in nonces. Both live minutes; a
 * pending signup asks for a new code, a wallet signs a new nonce.
 */
import type { PieceRecord } from "../domain/catalog_records.ts";
import type { RsaKeyStore, StoredRsaKey } from "../domain/signing_keys.ts";
import type { RowSource, RowTarget, WriteCounts } from "../db/row_copy.ts";
import type { PieceStore } from "../driver/driver.ts";
import { Batcher } from "./batcher.ts";
import { copyPiece } from "./piece_copy.ts";
import { eachPiece, forEachConcurrently } from "./piece_pages.ts";
import { copyTables } from "./table_copy.ts";

/** Pieces copied at once by default: enough to overlap the target's round trips. */
export const DEFAULT_MIGRATE_CONCURRENCY = 4;
/** Rows read from the source and written to the target per transaction. */
const DEFAULT_CHUNK_ROWS = 500;

/** Where the rows and the keys go: the PostgreSQL database (PostgresDatabase is one). */
export interface MigrationTargetDatabase {
  readonly rowTarget: RowTarget;
  readonly hmacKeys: {
    /** Takes the key if the database has none; answers whether it did and the key in force. */
    adopt(keyHex: string): Promise<{ adopted: boolean; keyHex: string }>;
  };
  /** The RSA keys of --token-alg RS256: taken if the database has none. */
  readonly rsaKeys: Pick<RsaKeyStore, "adopt">;
}

export interface MigrationOptions {
  /** The source data directory's rows; only read. */
  source: RowSource;
  /** The source data directory's pieces; only read. */
  sourceStore: PieceStore;
  /** Where the pieces go; the source store itself when they stay where they are. */
  targetStore: PieceStore;
  /** Where the rows go; null when they stay in the source database (only the pieces move). */
  targetDatabase: MigrationTargetDatabase | null;
  /** The source's HMAC key (hex), adopted by a database that has none; null: none to move. */
  sourceKeyHex: string | null;
  /** The source's RSA keys (rsa-keys.json), adopted by a database that has none; null: none. */
  sourceRsaKeys?: StoredRsaKey[] | null;
  /** Pieces copied at once (default 4). */
  concurrency?: number;
  /** Rows per read and per transaction (default 500); small in tests to cross chunk edges. */
  chunkRows?: number;
}

export type HmacKeyOutcome = "adopted" | "kept" | "not moved";

export interface RowCounts {
  pieces: number;
  deals: number;
  usage: number;
  tokens: number;
  corruptMarks: number;
  /** Blocks of CAR uploads in the block index. */
  blocks: number;
}

export interface MigrationSummary {
  pieces: {
    /** Pieces whose bytes were copied into the target store by this run. */
    copied: number;
    /** Pieces the target store already held with the recorded size. */
    skipped: number;
    bytesCopied: number;
    /** Pieces left behind (their rows too), each with why; a rerun tries them again. */
    failed: { cid: string; reason: string }[];
    /** Pieces marked corrupt in the source whose bytes do not verify: row and mark carried. */
    carriedCorrupt: string[];
    /** Pieces a sweep removed in the source: their rows carried, removed, without bytes. */
    carriedRemoved: number;
  };
  /** Rows this run inserted into the target database. */
  rows: RowCounts;
  /** Rows already there that this run brought forward (revocation, term, counters, digest). */
  updated: Omit<RowCounts, "corruptMarks" | "blocks">;
  /** Rows held back because their piece is not in the target yet; the next run copies them. */
  deferred: { deals: number; corruptMarks: number; blocks: number };
  hmacKey: HmacKeyOutcome;
  /** The RSA keys of --token-alg RS256 (the source has none: "not moved", said by no warning). */
  rsaKeys: HmacKeyOutcome;
  warnings: string[];
  seconds: number;
}

export async function migrateDataDir(options: MigrationOptions): Promise<MigrationSummary> {
  const started = performance.now();
  const summary: MigrationSummary = {
    pieces: {
      copied: 0,
      skipped: 0,
      bytesCopied: 0,
      failed: [],
      carriedCorrupt: [],
      carriedRemoved: 0,
    },
    rows: { pieces: 0, deals: 0, usage: 0, tokens: 0, corruptMarks: 0, blocks: 0 },
    updated: { pieces: 0, deals: 0, usage: 0, tokens: 0 },
    deferred: { deals: 0, corruptMarks: 0, blocks: 0 },
    hmacKey: "not moved",
    rsaKeys: "not moved",
    warnings: [],
    seconds: 0,
  };
  const chunkRows = options.chunkRows ?? DEFAULT_CHUNK_ROWS;
  const target = options.targetDatabase;
  if (target !== null) {
    // First, so an instance started against the database meanwhile signs with this key too.
    summary.hmacKey = await moveHmacKey(target, options.sourceKeyHex, summary.warnings);
    summary.rsaKeys = await moveRsaKeys(target, options.sourceRsaKeys ?? null, summary.warnings);
  }
  await copyPieces(options, chunkRows, summary);
  if (target !== null) {
    const counts = await copyTables(options.source, target.rowTarget, { chunkRows });
    for (const [table, written] of Object.entries(counts)) {
      addCounts(summary, table as keyof RowCounts, written);
    }
  }
  const deferred = summary.deferred.deals + summary.deferred.corruptMarks +
    summary.deferred.blocks;
  if (deferred > 0 && summary.pieces.failed.length === 0) {
    summary.warnings.push(
      `${deferred} rows name pieces uploaded after this run copied the pieces: run again`,
    );
  }
  summary.pieces.failed.sort((a, b) => a.cid < b.cid ? -1 : 1);
  summary.pieces.carriedCorrupt.sort();
  summary.seconds = Math.round(performance.now() - started) / 1000;
  return summary;
}

// ---------------------------------------------------------------------------------------------
// The HMAC key

/**
 * Puts the source's key into the database if it has none yet, so the tokens
 * the source issued keep verifying. A key already there is never replaced:
 * instances may be signing with it.
 */
async function moveHmacKey(
  target: MigrationTargetDatabase,
  sourceKeyHex: string | null,
  warnings: string[],
): Promise<HmacKeyOutcome> {
  if (sourceKeyHex === null) {
    warnings.push(
      "the source has no HMAC key file: tokens it issued will not verify on the targets",
    );
    return "not moved";
  }
  const adopted = await target.hmacKeys.adopt(sourceKeyHex);
  if (adopted.adopted) return "adopted";
  if (adopted.keyHex.trim().toLowerCase() !== sourceKeyHex.trim().toLowerCase()) {
    warnings.push(
      "the database already has another HMAC key (kept): tokens the source issued will not " +
        "verify on the targets",
    );
  }
  return "kept";
}

/**
 * Puts the source's RSA keys (a data directory that ran --token-alg RS256)
 * into the database if it has none yet, so the RS256 tokens the source
 * issued keep verifying there; keys already there are never replaced.
 */
async function moveRsaKeys(
  target: MigrationTargetDatabase,
  sourceKeys: StoredRsaKey[] | null,
  warnings: string[],
): Promise<HmacKeyOutcome> {
  if (sourceKeys === null) return "not moved";
  const adopted = await target.rsaKeys.adopt(sourceKeys);
  if (adopted.adopted) return "adopted";
  if (adopted.keys[0]?.kid !== sourceKeys[0]?.kid) {
    warnings.push(
      "the database already has other RSA keys (kept): RS256 tokens the source issued will " +
        "not verify on the targets",
    );
  }
  return "kept";
}

// ---------------------------------------------------------------------------------------------
// Pieces: bytes first, then their rows

/**
 * Copies every piece the source names, `concurrency` at a time, and writes
 * the rows of those now in the target store in chunks as they come.
 */
async function copyPieces(
  options: MigrationOptions,
  chunkRows: number,
  summary: MigrationSummary,
): Promise<void> {
  const target = options.targetDatabase?.rowTarget ?? null;
  const ready = new Batcher<PieceRecord>({
    size: chunkRows,
    flush: async (rows) => {
      if (target !== null) addCounts(summary, "pieces", await target.writePieces(rows));
    },
  });
  await forEachConcurrently(
    eachPiece(options.source, chunkRows),
    { concurrency: options.concurrency ?? DEFAULT_MIGRATE_CONCURRENCY },
    async (piece) => {
      const row = await migratePiece(piece, options, summary);
      if (row !== null) await ready.add(row);
    },
  );
  await ready.flush();
}

/** Moves one piece's bytes; returns the row to write for it, or null to leave it behind. */
async function migratePiece(
  piece: PieceRecord,
  options: MigrationOptions,
  summary: MigrationSummary,
): Promise<PieceRecord | null> {
  if (piece.removedAt !== null) {
    summary.pieces.carriedRemoved++;
    return piece;
  }
  const outcome = await copyPiece(piece, {
    source: options.sourceStore,
    target: options.targetStore,
    skipPresent: true,
  });
  if (outcome.kind === "skipped") {
    summary.pieces.skipped++;
    return piece;
  }
  if (outcome.kind === "copied") {
    summary.pieces.copied++;
    summary.pieces.bytesCopied += piece.size;
    return { ...piece, sha256: piece.sha256 ?? outcome.sha256 };
  }
  if (piece.corruptAt !== null) {
    summary.pieces.carriedCorrupt.push(piece.cid);
    return piece;
  }
  summary.pieces.failed.push({
    cid: piece.cid,
    reason: outcome.kind === "missing"
      ? "its file is missing in the source"
      : outcome.corrupt
      ? `${outcome.reason} (corrupt in the source: restore it from a backup, then run again)`
      : outcome.reason,
  });
  return null;
}

/** Adds what one write did to the summary's counts for its table. */
function addCounts(summary: MigrationSummary, table: keyof RowCounts, written: WriteCounts) {
  summary.rows[table] += written.inserted;
  if (table !== "corruptMarks" && table !== "blocks") summary.updated[table] += written.updated;
  if (table === "deals" || table === "corruptMarks" || table === "blocks") {
    summary.deferred[table] += written.deferred;
  }
}
