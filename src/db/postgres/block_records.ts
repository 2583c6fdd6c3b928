/**
 * The block index in PostgreSQL: the same table and rules as
 * db/sqlite/block_records.ts (see there), shared by every instance. Rows are
 * written by the catalog's recordUpload, in its transaction, a few thousand
 * per statement (arrays unnested), so a CAR of many blocks costs a few round
 * trips, not one per block.
 */
import type { Sql, TransactionSql } from "./connection.ts";
import type { BlockLocations, BlockRecords, StoredBlock } from "../../domain/catalog_records.ts";

/** Rows per INSERT: bounded so one statement's parameters stay small. */
const ROWS_PER_INSERT = 5000;

export class PostgresBlockRecords implements BlockRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async findBlock(multihash: Uint8Array): Promise<StoredBlock | null> {
    const [row] = await this.#sql`SELECT b.piece_cid AS "pieceCid", b.block_offset AS offset,
        b.block_length AS length
      FROM blocks b
      WHERE b.multihash = ${multihash.toHex()}
        AND NOT EXISTS (SELECT 1 FROM corrupt_pieces c WHERE c.cid = b.piece_cid)
      LIMIT 1`;
    return row
      ? { pieceCid: row.pieceCid as string, offset: Number(row.offset), length: Number(row.length) }
      : null;
  }

  async countBlocks(pieceCid: string): Promise<number> {
    const [row] = await this.#sql`SELECT COUNT(*)::int8 AS n FROM blocks
      WHERE piece_cid = ${pieceCid}`;
    return Number(row.n);
  }
}

/** Indexes a piece's blocks: call inside the transaction that records the piece. */
export async function indexBlocks(
  tx: TransactionSql,
  pieceCid: string,
  blocks: BlockLocations,
): Promise<void> {
  let multihashes: string[] = [];
  let offsets: number[] = [];
  let lengths: number[] = [];
  const flush = async () => {
    if (multihashes.length === 0) return;
    await tx.unsafe(
      `INSERT INTO blocks (multihash, piece_cid, block_offset, block_length)
       SELECT m, $2, o, l FROM unnest($1::text[], $3::int8[], $4::int8[]) AS t (m, o, l)
       ON CONFLICT (multihash, piece_cid) DO NOTHING`,
      [multihashes, pieceCid, offsets, lengths],
    );
    multihashes = [];
    offsets = [];
    lengths = [];
  };
  for (const block of blocks) {
    multihashes.push(block.multihash.toHex());
    offsets.push(block.offset);
    lengths.push(block.length);
    if (multihashes.length === ROWS_PER_INSERT) await flush();
  }
  await flush();
}
