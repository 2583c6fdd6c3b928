// deno-lint-ignore-file require-await -- the interface is async for networked databases; node:sqlite answers at once, and `async` still turns a throw into a rejection.
/**
 * The block index in SQLite (migration 9): the blocks of CAR uploads, found
 * by multihash, in pieces that are stored and not marked corrupt. Rows are
 * written by the catalog's recordUpload, in its transaction (indexBlocks).
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { BlockLocations, BlockRecords, StoredBlock } from "../../domain/catalog_records.ts";

export class SqliteBlockRecords implements BlockRecords {
  readonly #find: StatementSync;
  readonly #count: StatementSync;
  readonly #insert: StatementSync;

  constructor(db: Database) {
    this.#find = db.prepare(
      `SELECT b.piece_cid AS pieceCid, b.block_offset AS offset, b.block_length AS length
       FROM blocks b
       WHERE b.multihash = ?
         AND NOT EXISTS (SELECT 1 FROM corrupt_pieces c WHERE c.cid = b.piece_cid)
       LIMIT 1`,
    );
    this.#count = db.prepare(`SELECT COUNT(*) AS n FROM blocks WHERE piece_cid = ?`);
    this.#insert = db.prepare(
      `INSERT INTO blocks (multihash, piece_cid, block_offset, block_length) VALUES (?, ?, ?, ?)
       ON CONFLICT (multihash, piece_cid) DO NOTHING`,
    );
  }

  async findBlock(multihash: Uint8Array): Promise<StoredBlock | null> {
    const row = this.#find.get(multihash.toHex()) as StoredBlock | undefined;
    return row
      ? { pieceCid: row.pieceCid, offset: Number(row.offset), length: Number(row.length) }
      : null;
  }

  async countBlocks(pieceCid: string): Promise<number> {
    return Number((this.#count.get(pieceCid) as { n: number }).n);
  }

  /** Indexes a piece's blocks: call inside the transaction that records the piece. */
  indexBlocks(pieceCid: string, blocks: BlockLocations): void {
    for (const block of blocks) {
      this.#insert.run(block.multihash.toHex(), pieceCid, block.offset, block.length);
    }
  }
}
