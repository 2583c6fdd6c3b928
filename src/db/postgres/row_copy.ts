/**
 * PostgreSQL as either end of a row copy (db/row_copy.ts): the target of a
 * migration from a data directory, and the source of a backup into a new
 * one, read in one snapshot.
 *
 * As a target it is resumable, because a migration runs while the old server
 * still serves and once more after it stops: every row is written with ON
 * CONFLICT, so a rerun inserts only rows that are new, and what can change
 * in a source row afterwards is brought along, only ever forwards: a
 * revocation (never undone), a deal's later term end (extensions only
 * lengthen), a deletion, a usage counter that grew (GREATEST of both), a
 * digest or PieceCIDv2 that became known, a piece removed or stored again (its removal
 * travels with its row, and a removed piece's indexed blocks go with it).
 * Deals, corrupt marks and indexed blocks whose piece has no row yet are held
 * back (counted as deferred): an instance serving from the target must never
 * see a row naming a piece it does not have. RETURNING (xmax = 0) tells an
 * inserted row from an updated one.
 */
import type { Sql, TransactionSql } from "./connection.ts";
import { PIECE_COLUMNS as PIECE_SELECT } from "./catalog_records.ts";
import {
  keyOf,
  pageQuery,
  PIECE_COLUMNS,
  PIECE_OF_ROW,
  pieceRowOf,
  TABLE_SHAPES,
} from "../row_copy.ts";
import type { CopiedTable, RowSource, RowTarget, TableRow, WriteCounts } from "../row_copy.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";

type Written = readonly Record<string, unknown>[];

export class PostgresRowTarget implements RowTarget {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async writePieces(pieces: readonly PieceRecord[]): Promise<WriteCounts> {
    if (pieces.length === 0) return { inserted: 0, updated: 0, deferred: 0 };
    const rows = pieces.map(pieceRowOf);
    // A digest or PieceCIDv2 the source learned after an earlier run fills one the target lacks.
    const written = await this.#sql.begin(async (tx) => {
      const upserted = await tx`INSERT INTO pieces ${tx.values(rows, PIECE_COLUMNS)}
        ON CONFLICT (cid) DO UPDATE SET sha256 = COALESCE(pieces.sha256, excluded.sha256),
          piece_cid_v2 = COALESCE(pieces.piece_cid_v2, excluded.piece_cid_v2),
          piece_cid_v1 = COALESCE(pieces.piece_cid_v1, excluded.piece_cid_v1)
        WHERE (pieces.sha256 IS NULL AND excluded.sha256 IS NOT NULL)
           OR (pieces.piece_cid_v2 IS NULL AND excluded.piece_cid_v2 IS NOT NULL)
        RETURNING (xmax = 0) AS inserted`;
      await writeRemovals(tx, pieces);
      return upserted;
    });
    return countsOf(written, 0);
  }

  async writeRows(table: CopiedTable, rows: readonly TableRow[]): Promise<WriteCounts> {
    const columns = TABLE_SHAPES[table].written;
    return await this.#sql.begin(async (tx) => {
      const pieceColumn = PIECE_OF_ROW[table];
      const present = pieceColumn
        ? await withPiece(tx, rows, pieceColumn)
        : rows.map((row) => ({ ...row }));
      const deferred = rows.length - present.length;
      if (present.length === 0) return { inserted: 0, updated: 0, deferred };
      const values = valuesOf(tx, present, columns);
      return countsOf(await UPSERTS[table](tx, values), deferred);
    });
  }
}

/** Rows as the VALUES of an INSERT, in the written columns' order. */
const valuesOf = (tx: TransactionSql, rows: TableRow[], columns: readonly string[]) =>
  tx.values(rows, columns);
type Upsert = (tx: TransactionSql, values: ReturnType<typeof valuesOf>) => Promise<Written>;

const UPSERTS: Readonly<Record<CopiedTable, Upsert>> = {
  // An extension lengthens a deal's term; a term never shrinks. A deletion is never undone.
  deals: (tx, values) =>
    tx`INSERT INTO deals ${values}
      ON CONFLICT (id) DO UPDATE
      SET term_days = GREATEST(deals.term_days, excluded.term_days),
          term_ends_at = GREATEST(deals.term_ends_at COLLATE "C", excluded.term_ends_at),
          deleted_at = COALESCE(deals.deleted_at, excluded.deleted_at)
      WHERE excluded.term_ends_at COLLATE "C" > deals.term_ends_at
         OR (deals.deleted_at IS NULL AND excluded.deleted_at IS NOT NULL)
      RETURNING (xmax = 0) AS inserted`,
  // Counters only grow, on both sides: the larger one is the later state. Nothing is
  // reserved in flight on the target for these rows (reserved_bytes stays 0).
  usage: (tx, values) =>
    tx`INSERT INTO usage_daily ${values}
      ON CONFLICT (subject, day) DO UPDATE
      SET bytes = GREATEST(usage_daily.bytes, excluded.bytes),
          uploads = GREATEST(usage_daily.uploads, excluded.uploads)
      WHERE excluded.bytes > usage_daily.bytes OR excluded.uploads > usage_daily.uploads
      RETURNING (xmax = 0) AS inserted`,
  // A revocation made in the source after an earlier run must reach the target.
  tokens: (tx, values) =>
    tx`INSERT INTO tokens ${values}
      ON CONFLICT (jti) DO UPDATE SET revoked_at = excluded.revoked_at
      WHERE tokens.revoked_at IS NULL AND excluded.revoked_at IS NOT NULL
      RETURNING (xmax = 0) AS inserted`,
  // The target numbers its marks itself (its own sequence, which its pollers follow).
  corruptMarks: (tx, values) =>
    tx`INSERT INTO corrupt_pieces ${values}
      ON CONFLICT (cid) DO NOTHING RETURNING true AS inserted`,
  // A block's place in its piece never changes.
  blocks: (tx, values) =>
    tx`INSERT INTO blocks ${values}
      ON CONFLICT (multihash, piece_cid) DO NOTHING RETURNING true AS inserted`,
};

/**
 * The pieces' removals, beside their rows: a piece the source removed is
 * removed in the target (its bytes were not copied; any copied by an earlier
 * run are orphans a sweep removes), and one the source stored again is
 * stored in the target (its bytes were just copied). A removed piece's
 * indexed blocks, copied by an earlier run, go: a block lives while its piece does.
 */
async function writeRemovals(tx: TransactionSql, pieces: readonly PieceRecord[]): Promise<void> {
  const removed = pieces.filter((piece) => piece.removedAt !== null);
  const stored = pieces.filter((piece) => piece.removedAt === null).map((piece) => piece.cid);
  for (const piece of removed) {
    await tx.unsafe(
      `INSERT INTO removed_pieces (cid, removing_at, removed_at) VALUES ($1, $2, $2)
       ON CONFLICT (cid) DO NOTHING`,
      [piece.cid, piece.removedAt],
    );
  }
  if (removed.length > 0) {
    const cids = removed.map((piece) => piece.cid);
    await tx.unsafe(`DELETE FROM blocks WHERE piece_cid = ANY($1::text[])`, [cids]);
  }
  if (stored.length > 0) {
    await tx.unsafe(`DELETE FROM removed_pieces WHERE cid = ANY($1::text[])`, [stored]);
  }
}

/** The rows whose piece (named in `column`) has its row in the target already. */
async function withPiece(
  tx: TransactionSql,
  rows: readonly TableRow[],
  column: string,
): Promise<TableRow[]> {
  const cids = [...new Set(rows.map((row) => row[column] as string))];
  const found = await tx`SELECT cid FROM pieces WHERE cid IN ${tx.list(cids)}`;
  const present = new Set(found.map((row) => row.cid as string));
  return rows.filter((row) => present.has(row[column] as string)).map((row) => ({ ...row }));
}

/** The counts of an upsert's RETURNING (xmax = 0) AS inserted rows. */
function countsOf(written: Written, deferred: number): WriteCounts {
  const inserted = written.filter((row) => row.inserted === true).length;
  return { inserted, updated: written.length - inserted, deferred };
}

/**
 * Reads a database's rows inside one REPEATABLE READ, READ ONLY transaction:
 * every page sees the same instant, however long the copy takes, and
 * nothing is written. `read` runs inside it; the transaction ends with it.
 */
export async function readSnapshot<T>(sql: Sql, read: (rows: RowSource) => Promise<T>): Promise<T> {
  // Each page within the deadline; the snapshot as long as the copy takes.
  return await sql.begin((tx) => read(new PostgresRowSource(tx)), {
    mode: "ISOLATION LEVEL REPEATABLE READ READ ONLY",
    deadline: "each statement",
  });
}

class PostgresRowSource implements RowSource {
  readonly #tx: TransactionSql;

  constructor(tx: TransactionSql) {
    this.#tx = tx;
  }

  async piecesAfter(afterCid: string, limit: number): Promise<PieceRecord[]> {
    const rows = await this.#tx.unsafe(
      `SELECT ${PIECE_SELECT} WHERE p.cid > $1 ORDER BY p.cid LIMIT $2`,
      [afterCid, limit],
    );
    return rows as unknown as PieceRecord[];
  }

  async rowsAfter(table: CopiedTable, after: TableRow | null, limit: number): Promise<TableRow[]> {
    const shape = TABLE_SHAPES[table];
    const text = pageQuery(shape, { after: after !== null, placeholder: (n) => `$${n}` });
    const params = after === null ? [] : keyOf(shape, after);
    return [...await this.#tx.unsafe(text, [...params, limit])] as TableRow[];
  }
}
