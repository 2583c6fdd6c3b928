/**
 * Moves a single-box data directory into the scale-out backends: its pieces
 * into another piece store (a bucket, or a new directory), its rows into
 * PostgreSQL. Driver-agnostic: the pieces go through the PieceStore interface
 * (open on the source, stat/stage/commit on the target), the rows from the
 * source SQLite database into a postgres.js pool.
 *
 * Resumable, because a migration of terabytes is interrupted, and because the
 * operator runs it first while the old server still serves and once more
 * after stopping it:
 *
 * - a piece whose key the target store already holds with the recorded size
 *   is skipped (neither read nor hashed again);
 * - every row is written with ON CONFLICT, so a rerun inserts only rows that
 *   are new since the last run. What can change in a source row afterwards
 *   is brought along, only ever forwards: a revocation (never undone), a
 *   deal's later term end (extensions only lengthen), a usage counter that
 *   grew (GREATEST of both), a digest that became known.
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
 * right bytes on the targets as on the source.
 *
 * Not copied: signup codes and wallet sign-in nonces. Both live minutes; a
 * pending signup asks for a new code, a wallet signs a new nonce.
 */
import type { Database } from "../db/sqlite/database.ts";
import { SqliteCatalogRecords } from "../db/sqlite/catalog_records.ts";
import type { Sql, TransactionSql } from "../db/postgres/connection.ts";
import type { PieceRecord } from "../db/records.ts";
import { StoreError } from "../storage/driver/driver.ts";
import type { PieceStore } from "../storage/driver/driver.ts";

/** Pieces copied at once by default: enough to overlap the target's round trips. */
export const DEFAULT_MIGRATE_CONCURRENCY = 4;
/** Rows read from the source and written to the target per transaction. */
const DEFAULT_CHUNK_ROWS = 500;

export interface MigrationOptions {
  /** The source data directory's database; only read. */
  sourceDb: Database;
  /** The source data directory's pieces; only read. */
  sourceStore: PieceStore;
  /** Where the pieces go; the source store itself when they stay where they are. */
  targetStore: PieceStore;
  /** Where the rows go; null when they stay in the source database (only the pieces move). */
  targetDatabase: { readonly sql: Sql } | null;
  /** The source's HMAC key (hex), adopted by a database that has none; null: none to move. */
  sourceKeyHex: string | null;
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
  };
  /** Rows this run inserted into the target database. */
  rows: RowCounts;
  /** Rows already there that this run brought forward (revocation, term, counters, digest). */
  updated: Omit<RowCounts, "corruptMarks">;
  /** Rows held back because their piece is not in the target yet; the next run copies them. */
  deferred: { deals: number; corruptMarks: number };
  hmacKey: HmacKeyOutcome;
  warnings: string[];
  seconds: number;
}

export async function migrateDataDir(options: MigrationOptions): Promise<MigrationSummary> {
  const started = performance.now();
  const summary: MigrationSummary = {
    pieces: { copied: 0, skipped: 0, bytesCopied: 0, failed: [], carriedCorrupt: [] },
    rows: { pieces: 0, deals: 0, usage: 0, tokens: 0, corruptMarks: 0 },
    updated: { pieces: 0, deals: 0, usage: 0, tokens: 0 },
    deferred: { deals: 0, corruptMarks: 0 },
    hmacKey: "not moved",
    warnings: [],
    seconds: 0,
  };
  const chunkRows = options.chunkRows ?? DEFAULT_CHUNK_ROWS;
  const sql = options.targetDatabase?.sql ?? null;
  if (sql !== null) {
    // First, so an instance started against the database meanwhile signs with this key too.
    summary.hmacKey = await moveHmacKey(sql, options.sourceKeyHex, summary.warnings);
  }
  await copyPieces(options, sql, chunkRows, summary);
  if (sql !== null) await copyRows(options.sourceDb, sql, chunkRows, summary);
  const deferred = summary.deferred.deals + summary.deferred.corruptMarks;
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
 * Puts the source's key into the database's hmac_key row if it has none yet
 * (db/postgres/hmac_keys.ts reads that row), so the tokens the source issued
 * keep verifying. A key already there is never replaced: instances may be
 * signing with it.
 */
async function moveHmacKey(
  sql: Sql,
  sourceKeyHex: string | null,
  warnings: string[],
): Promise<HmacKeyOutcome> {
  if (sourceKeyHex === null) {
    warnings.push(
      "the source has no HMAC key file: tokens it issued will not verify on the targets",
    );
    return "not moved";
  }
  const adopted = await adoptHmacKey(sql, sourceKeyHex);
  if (adopted.adopted) return "adopted";
  if (adopted.keyHex.trim().toLowerCase() !== sourceKeyHex.trim().toLowerCase()) {
    warnings.push(
      "the database already has another HMAC key (kept): tokens the source issued will not " +
        "verify on the targets",
    );
  }
  return "kept";
}

/** Inserts the key if the row is missing; answers whether it did, and the key now in force. */
export async function adoptHmacKey(
  sql: Sql,
  keyHex: string,
): Promise<{ adopted: boolean; keyHex: string }> {
  const inserted = await sql`INSERT INTO hmac_key (id, key_hex) VALUES (1, ${keyHex.trim()})
    ON CONFLICT (id) DO NOTHING RETURNING key_hex`;
  if (inserted.length > 0) return { adopted: true, keyHex: inserted[0].key_hex as string };
  const [row] = await sql`SELECT key_hex FROM hmac_key WHERE id = 1`;
  return { adopted: false, keyHex: row.key_hex as string };
}

// ---------------------------------------------------------------------------------------------
// Pieces: bytes first, then their rows

type PieceOutcome =
  | { kind: "skipped" }
  | { kind: "copied"; sha256: string | null }
  | { kind: "failed"; reason: string };

/**
 * Copies every piece the source database names, `concurrency` at a time, and
 * writes the rows of those now in the target store in chunks as they come.
 */
async function copyPieces(
  options: MigrationOptions,
  sql: Sql | null,
  chunkRows: number,
  summary: MigrationSummary,
): Promise<void> {
  const queue = piecesOf(new SqliteCatalogRecords(options.sourceDb), chunkRows);
  const ready: PieceRecord[] = [];
  const flush = async () => {
    const rows = ready.splice(0);
    if (sql !== null && rows.length > 0) await writePieceRows(sql, rows, summary);
  };
  // The first error stops every worker from taking another piece; it is thrown once all
  // of them are done, so nothing is written after the caller has given up.
  let stopped = false;
  const worker = async () => {
    try {
      for (let next = await queue.next(); !stopped && !next.done; next = await queue.next()) {
        const row = await migratePiece(next.value, options, summary);
        if (row === null) continue;
        ready.push(row);
        if (ready.length >= chunkRows) await flush();
      }
    } catch (error) {
      stopped = true;
      throw error;
    }
  };
  const concurrency = options.concurrency ?? DEFAULT_MIGRATE_CONCURRENCY;
  const results = await Promise.allSettled(Array.from({ length: concurrency }, worker));
  const failure = results.find((result) => result.status === "rejected");
  if (failure) throw failure.reason;
  await flush();
}

/** Every piece row of the source, a page at a time, shared by the workers. */
async function* piecesOf(records: SqliteCatalogRecords, pageSize: number) {
  let cursor = "";
  for (let page; (page = await records.piecesAfter(cursor, pageSize)).length > 0;) {
    yield* page.map((piece) => ({ ...piece, size: Number(piece.size) }));
    cursor = page.at(-1)!.cid;
  }
}

/** Moves one piece's bytes; returns the row to write for it, or null to leave it behind. */
async function migratePiece(
  piece: PieceRecord,
  options: MigrationOptions,
  summary: MigrationSummary,
): Promise<PieceRecord | null> {
  const outcome = await copyPieceBytes(piece, options.sourceStore, options.targetStore);
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
  summary.pieces.failed.push({ cid: piece.cid, reason: outcome.reason });
  return null;
}

async function copyPieceBytes(
  piece: PieceRecord,
  source: PieceStore,
  target: PieceStore,
): Promise<PieceOutcome> {
  // The resumability rule: bytes already there under the key, at the recorded size.
  if ((await target.stat(piece.cid))?.size === piece.size) return { kind: "skipped" };
  let opened;
  try {
    opened = await source.open(piece.cid);
  } catch (error) {
    return { kind: "failed", reason: `cannot read it in the source: ${(error as Error).message}` };
  }
  if (opened === null) return { kind: "failed", reason: "its file is missing in the source" };
  if (opened.size !== piece.size) {
    await opened.body.cancel().catch(() => {});
    return {
      kind: "failed",
      reason: `the source file has ${opened.size} bytes, the database records ${piece.size}`,
    };
  }
  let staged;
  try {
    staged = await target.stage(opened.body, { expectedBytes: piece.size, computeSha256: true });
  } catch (error) {
    // Staging stops reading at the first byte too many: close the file behind it.
    await opened.body.cancel().catch(() => {});
    if (isTargetOutage(error)) throw error;
    return { kind: "failed", reason: `cannot copy it: ${(error as Error).message}` };
  }
  if (piece.sha256 !== null && staged.sha256 !== piece.sha256) {
    await staged.discard();
    return {
      kind: "failed",
      reason: "its bytes do not match their recorded SHA-256 (corrupt in the source: " +
        "restore it from a backup, then run again)",
    };
  }
  try {
    await staged.commit(piece.cid);
  } catch (error) {
    await staged.discard();
    if (isTargetOutage(error)) throw error;
    return { kind: "failed", reason: `the target refused it: ${(error as Error).message}` };
  }
  return { kind: "copied", sha256: staged.sha256 };
}

/**
 * A target store that is offline or full fails every piece after this one
 * too: the run stops (what it did stays done) instead of naming them all.
 */
function isTargetOutage(error: unknown): boolean {
  if (!(error instanceof StoreError)) return true;
  return error.failure === "offline" || error.failure === "full";
}

async function writePieceRows(
  sql: Sql,
  pieces: PieceRecord[],
  summary: MigrationSummary,
): Promise<void> {
  const rows = pieces.map((piece) => ({
    cid: piece.cid,
    size: piece.size,
    sha256: piece.sha256,
    content_type: piece.contentType,
    filename: piece.filename,
    created_at: piece.createdAt,
  }));
  const written = await sql.begin((tx) =>
    tx`INSERT INTO pieces ${tx(rows)}
      ON CONFLICT (cid) DO UPDATE SET sha256 = excluded.sha256
      WHERE pieces.sha256 IS NULL AND excluded.sha256 IS NOT NULL
      RETURNING (xmax = 0) AS inserted`
  );
  count(written, summary, "pieces");
}

// ---------------------------------------------------------------------------------------------
// The other rows, table by table, after the pieces

type SourceRow = Record<string, string | number | null>;

/** One source table read in key order, a chunk per transaction on the target. */
interface TableCopy {
  /** Reads the chunk after the cursor (the key columns of the last row, in order). */
  read: string;
  key: readonly string[];
  start: readonly (string | number)[];
  write(tx: TransactionSql, rows: SourceRow[], summary: MigrationSummary): Promise<void>;
}

async function copyRows(
  sourceDb: Database,
  sql: Sql,
  chunkRows: number,
  summary: MigrationSummary,
): Promise<void> {
  for (const table of TABLES) {
    const read = sourceDb.prepare(table.read);
    let cursor = table.start;
    for (let rows; (rows = read.all(...cursor, chunkRows) as SourceRow[]).length > 0;) {
      const plain = rows.map((row) => ({ ...row }));
      await sql.begin((tx) => table.write(tx, plain, summary));
      cursor = table.key.map((column) => rows.at(-1)![column] as string | number);
    }
  }
}

const TABLES: readonly TableCopy[] = [
  {
    read: `SELECT id, cid, tier, owner_sub, owner, size, content_type, filename, term_days,
      created_at, term_ends_at FROM deals WHERE id > ? ORDER BY id LIMIT ?`,
    key: ["id"],
    start: [""],
    async write(tx, rows, summary) {
      const present = await withPiece(tx, rows);
      summary.deferred.deals += rows.length - present.length;
      if (present.length === 0) return;
      // An extension lengthens a deal's term; a term never shrinks.
      count(
        await tx`INSERT INTO deals ${tx(present)}
          ON CONFLICT (id) DO UPDATE
          SET term_days = excluded.term_days, term_ends_at = excluded.term_ends_at
          WHERE excluded.term_ends_at > deals.term_ends_at
          RETURNING (xmax = 0) AS inserted`,
        summary,
        "deals",
      );
    },
  },
  {
    read: `SELECT subject, day, bytes, uploads FROM usage_daily
      WHERE (subject, day) > (?, ?) ORDER BY subject, day LIMIT ?`,
    key: ["subject", "day"],
    start: ["", ""],
    async write(tx, rows, summary) {
      // Counters only grow, on both sides: the larger one is the later state. Nothing is
      // reserved in flight on the target for these rows (reserved_bytes stays 0).
      count(
        await tx`INSERT INTO usage_daily ${tx(rows)}
          ON CONFLICT (subject, day) DO UPDATE
          SET bytes = GREATEST(usage_daily.bytes, excluded.bytes),
              uploads = GREATEST(usage_daily.uploads, excluded.uploads)
          WHERE excluded.bytes > usage_daily.bytes OR excluded.uploads > usage_daily.uploads
          RETURNING (xmax = 0) AS inserted`,
        summary,
        "usage",
      );
    },
  },
  {
    read: `SELECT jti, sub, email, wallet, label, scopes, quota_mb, issued_at, expires_at,
      revoked_at FROM tokens WHERE jti > ? ORDER BY jti LIMIT ?`,
    key: ["jti"],
    start: [""],
    async write(tx, rows, summary) {
      // A revocation made in the source after an earlier run must reach the target.
      count(
        await tx`INSERT INTO tokens ${tx(rows)}
          ON CONFLICT (jti) DO UPDATE SET revoked_at = excluded.revoked_at
          WHERE tokens.revoked_at IS NULL AND excluded.revoked_at IS NOT NULL
          RETURNING (xmax = 0) AS inserted`,
        summary,
        "tokens",
      );
    },
  },
  {
    // The target numbers its marks itself (its own sequence, which its pollers follow).
    read: `SELECT mark, cid, marked_at, problem FROM corrupt_pieces
      WHERE mark > ? ORDER BY mark LIMIT ?`,
    key: ["mark"],
    start: [0],
    async write(tx, rows, summary) {
      const marks = (await withPiece(tx, rows)).map(({ cid, marked_at, problem }) => ({
        cid,
        marked_at,
        problem,
      }));
      summary.deferred.corruptMarks += rows.length - marks.length;
      if (marks.length === 0) return;
      const inserted = await tx`INSERT INTO corrupt_pieces ${tx(marks)}
        ON CONFLICT (cid) DO NOTHING RETURNING cid`;
      summary.rows.corruptMarks += inserted.length;
    },
  },
];

/** The rows whose piece (their `cid`) has its row in the target already. */
async function withPiece(tx: TransactionSql, rows: SourceRow[]): Promise<SourceRow[]> {
  const cids = [...new Set(rows.map((row) => row.cid as string))];
  const found = await tx`SELECT cid FROM pieces WHERE cid IN ${tx(cids)}`;
  const present = new Set(found.map((row) => row.cid as string));
  return rows.filter((row) => present.has(row.cid as string));
}

/** Adds the RETURNING (xmax = 0) AS inserted rows of an upsert to the summary. */
function count(
  written: readonly Record<string, unknown>[],
  summary: MigrationSummary,
  table: keyof MigrationSummary["updated"],
): void {
  const inserted = written.filter((row) => row.inserted === true).length;
  summary.rows[table] += inserted;
  summary.updated[table] += written.length - inserted;
}
