/**
 * The rows a copy between two metadata databases carries, as interfaces each
 * dialect implements (db/sqlite/row_copy.ts, db/postgres/row_copy.ts), so the
 * operator's copies (ops/migrate.ts: a data directory into PostgreSQL;
 * ops/backup.ts: any deployment into a new data directory) hold no SQL.
 *
 * Both schemas name their tables and columns alike, so a row travels as the
 * schema's own column names and values (snake_case, RFC 3339 text, numbers).
 * Piece rows travel as PieceRecords, because a copy reads them in pages
 * anyway (CatalogRecords.piecesAfter) and writes them apart from the rest:
 * a migration writes a piece's row only after its bytes are in the target.
 * A removed piece's removal travels with its row (written in one
 * transaction), so no target ever sees the row of a removed piece without
 * it; what a manifest lists is not copied: the target's first sweep reads
 * its manifests again (ops/gc.ts).
 *
 * Not copied: signup codes and wallet sign-in nonces (they live minutes),
 * unfinished resumable uploads (a tus client starts again on a 404; a
 * finished one is a deal), what only PostgreSQL has (instances, cap
 * reservations in flight), and the last garbage-collection sweep (the
 * target's own is what it shows).
 */
import type { PieceRecord } from "../domain/catalog_records.ts";
import { pieceCidsOf } from "./piece_cid_columns.ts";

/** The tables copied after the pieces, in the order they are copied. */
export const COPIED_TABLES = ["deals", "usage", "tokens", "corruptMarks", "blocks"] as const;
export type CopiedTable = typeof COPIED_TABLES[number];

/** A row of one of the copied tables, by the schema's column names. */
export type TableRow = Record<string, string | number | null>;

/** What one write did: rows new to the target, rows it brought forward, rows held back. */
export interface WriteCounts {
  inserted: number;
  /** Rows already there whose later state this write brought (a revocation, a longer term, …). */
  updated: number;
  /** Rows left out because their piece has no row in the target yet. */
  deferred: number;
}

/** Reads a database's rows in key order, a page at a time. */
export interface RowSource {
  /** Up to `limit` pieces with cids after `afterCid`, in cid order. */
  piecesAfter(afterCid: string, limit: number): Promise<PieceRecord[]>;
  /** Up to `limit` rows of `table` after the row `after` (null: from the first), in key order. */
  rowsAfter(table: CopiedTable, after: TableRow | null, limit: number): Promise<TableRow[]>;
}

/**
 * Writes copied rows, one transaction per call. What each dialect does with
 * a row already there is its own rule (see its implementation).
 */
export interface RowTarget {
  writePieces(pieces: readonly PieceRecord[]): Promise<WriteCounts>;
  writeRows(table: CopiedTable, rows: readonly TableRow[]): Promise<WriteCounts>;
}

/** A database that can hand out a RowSource seeing one instant of it. */
export interface SnapshotSource {
  /** Runs `read` against one consistent snapshot; the snapshot ends when it settles. */
  snapshot<T>(read: (rows: RowSource) => Promise<T>): Promise<T>;
}

/** A copied table as both schemas have it: what is read, what is written, the paging key. */
export interface TableShape {
  /** The table's name in both schemas. */
  name: string;
  /** The columns read from the source, key columns included. */
  columns: readonly string[];
  /** The columns written into the target (a target numbers corrupt marks itself). */
  written: readonly string[];
  /** The columns pages are cut by, in order: unique, and compared bytewise in both. */
  key: readonly string[];
}

const DEAL_COLUMNS = [
  "id",
  "cid",
  "tier",
  "owner_sub",
  "owner",
  "size",
  "content_type",
  "filename",
  "term_days",
  "created_at",
  "term_ends_at",
  "deleted_at",
] as const;
const TOKEN_COLUMNS = [
  "jti",
  "sub",
  "email",
  "wallet",
  "label",
  "scopes",
  "quota_mb",
  "issued_at",
  "expires_at",
  "revoked_at",
] as const;

export const TABLE_SHAPES: Readonly<Record<CopiedTable, TableShape>> = {
  deals: { name: "deals", columns: DEAL_COLUMNS, written: DEAL_COLUMNS, key: ["id"] },
  usage: {
    name: "usage_daily",
    columns: ["subject", "day", "bytes", "uploads"],
    written: ["subject", "day", "bytes", "uploads"],
    key: ["subject", "day"],
  },
  tokens: { name: "tokens", columns: TOKEN_COLUMNS, written: TOKEN_COLUMNS, key: ["jti"] },
  corruptMarks: {
    name: "corrupt_pieces",
    columns: ["mark", "cid", "marked_at", "problem"],
    written: ["cid", "marked_at", "problem"],
    key: ["mark"],
  },
  // The block index of CAR uploads: rows never change once written.
  blocks: {
    name: "blocks",
    columns: ["multihash", "piece_cid", "block_offset", "block_length"],
    written: ["multihash", "piece_cid", "block_offset", "block_length"],
    key: ["multihash", "piece_cid"],
  },
};

/** The column of a copied table's rows that names their piece, for tables that have one. */
export const PIECE_OF_ROW: Partial<Record<CopiedTable, string>> = {
  deals: "cid",
  corruptMarks: "cid",
  blocks: "piece_cid",
};

/** The piece columns a copy writes (a piece's corrupt mark travels in corruptMarks). */
export const PIECE_COLUMNS = [
  "cid",
  "size",
  "sha256",
  "content_type",
  "filename",
  "created_at",
  "piece_cid_v2",
  "piece_cid_v1",
] as const;

/** A PieceRecord as the row of PIECE_COLUMNS. */
export function pieceRowOf(piece: PieceRecord): TableRow {
  const [v2, v1] = pieceCidsOf(piece);
  return {
    cid: piece.cid,
    size: piece.size,
    sha256: piece.sha256,
    content_type: piece.contentType,
    filename: piece.filename,
    created_at: piece.createdAt,
    piece_cid_v2: v2,
    piece_cid_v1: v1,
  };
}

/**
 * The keyset page of a table both dialects run: rows after the given key
 * values (none: from the first), in key order. `placeholder(n)` is the
 * dialect's n-th parameter ("?" or "$n"); the limit is the last parameter.
 */
export function pageQuery(
  shape: TableShape,
  options: { after: boolean; placeholder: (n: number) => string },
): string {
  const key = shape.key.join(", ");
  const keyParams = shape.key.map((_, i) => options.placeholder(i + 1));
  const where = options.after ? ` WHERE (${key}) > (${keyParams.join(", ")})` : "";
  const limit = options.placeholder(options.after ? shape.key.length + 1 : 1);
  return `SELECT ${
    shape.columns.join(", ")
  } FROM ${shape.name}${where} ORDER BY ${key} LIMIT ${limit}`;
}

/** The key values of a row, in key order: the parameters of the page after it. */
export function keyOf(shape: TableShape, row: TableRow): (string | number | null)[] {
  return shape.key.map((column) => row[column]);
}
