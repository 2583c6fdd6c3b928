/**
 * The rows beside the pieces, copied table by table from one metadata
 * database to another through db/row_copy.ts (the dialects' SQL lives
 * there): a page read in key order, written in one transaction, until the
 * source has no more. A migration runs it after the pieces; a backup of a
 * shared database runs it inside one snapshot, after the piece rows.
 */
import { COPIED_TABLES } from "../db/row_copy.ts";
import type { CopiedTable, RowSource, RowTarget, WriteCounts } from "../db/row_copy.ts";
import { eachPiece } from "./piece_pages.ts";

export type TableCounts = Record<CopiedTable, WriteCounts>;

/** Copies every row of the copied tables, `chunkRows` per page; what each write did, by table. */
export async function copyTables(
  source: RowSource,
  target: RowTarget,
  options: { chunkRows: number },
): Promise<TableCounts> {
  const counts = {} as TableCounts;
  for (const table of COPIED_TABLES) {
    const total: WriteCounts = { inserted: 0, updated: 0, deferred: 0 };
    let after = null;
    for (let rows; (rows = await source.rowsAfter(table, after, options.chunkRows)).length > 0;) {
      const written = await target.writeRows(table, rows);
      total.inserted += written.inserted;
      total.updated += written.updated;
      total.deferred += written.deferred;
      after = rows.at(-1)!;
    }
    counts[table] = total;
  }
  return counts;
}

/** Copies every piece row (not the bytes), `chunkRows` per transaction; returns how many. */
export async function copyPieceRows(
  source: RowSource,
  target: RowTarget,
  options: { chunkRows: number },
): Promise<number> {
  let copied = 0;
  let chunk = [];
  for await (const piece of eachPiece(source, options.chunkRows)) {
    chunk.push(piece);
    if (chunk.length < options.chunkRows) continue;
    copied += (await target.writePieces(chunk)).inserted;
    chunk = [];
  }
  if (chunk.length > 0) copied += (await target.writePieces(chunk)).inserted;
  return copied;
}
