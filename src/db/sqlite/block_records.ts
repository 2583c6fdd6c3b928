// deno-lint-ignore-file require-await -- the interface is async for networked databases; node:sqlite answers at once, and `async` still turns a throw into a rejection.
/**
 * The block index in SQLite (migrations 9 and 14): the blocks of CAR
 * uploads, found by multihash, in pieces that are stored (a row in pieces,
 * not being removed) and not marked corrupt.
 *
 * Why the rows are written before the piece's commit, in slices: a CAR of
 * many small blocks is many rows, and one synchronous transaction of them
 * held the event loop for seconds (a million rows: 18 s). So the catalog's
 * recordUpload writes them first, a slice per transaction (kernel/turns.ts),
 * and commits the piece and its deal after; until the piece's row is there
 * (or while it is being removed) the query does not see them, so a half
 * written index is never served. A commit that fails takes its rows back
 * (forgetUnstored); rows a crash left behind are invisible, and the next
 * upload of that cid clears them first.
 *
 * Why each slice's pages are checkpointed in a turn of their own: SQLite
 * checkpoints by itself inside the commit that takes the WAL past 1,000
 * pages, copying all of them to the database file and syncing both, so
 * every few slices one commit held the event loop 20-100 ms. A passive
 * checkpoint every CHECKPOINT_ROWS rows, in a turn of its own after a slice,
 * copies only their pages (2-10 ms), and the commit that would cross 1,000
 * never comes.
 */
import type { StatementSync } from "node:sqlite";
import { transaction } from "./database.ts";
import type { Database } from "./database.ts";
import type { BlockLocations, BlockRecords, StoredBlock } from "../../domain/catalog_records.ts";
import { inSlices, yieldToEventLoop } from "../../kernel/turns.ts";

/**
 * Rows written between two checkpoints of the index's pages (a row in key
 * order is about 300 bytes of WAL: some 300 pages), so the WAL stays well
 * under the 1,000 pages at which SQLite would checkpoint inside a commit, and
 * a checkpoint's two waits for the disk come no more often than SQLite's did.
 */
const CHECKPOINT_ROWS = 4000;

/** Rows one statement deletes of a piece's leftovers, a slice at a time. */
const FORGET_ROWS = 2000;

/**
 * Rows one INSERT writes while indexing: a statement of 64 rows costs the
 * serving thread 2.5 times less a row than 64 statements (200,000 rows: 0.45
 * s against 1.1 s), which is most of a million-block CAR's indexing.
 */
const INSERT_ROWS = 64;

export class SqliteBlockRecords implements BlockRecords {
  readonly #db: Database;
  readonly #find: StatementSync;
  readonly #count: StatementSync;
  readonly #insert: StatementSync;
  readonly #insertMany: StatementSync;
  readonly #forgetSome: StatementSync;

  constructor(db: Database) {
    this.#db = db;
    this.#find = db.prepare(
      `SELECT b.piece_cid AS pieceCid, b.block_offset AS offset, b.block_length AS length
       FROM blocks b
       WHERE b.multihash = ?
         AND EXISTS (SELECT 1 FROM pieces p WHERE p.cid = b.piece_cid)
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = b.piece_cid)
         AND NOT EXISTS (SELECT 1 FROM corrupt_pieces c WHERE c.cid = b.piece_cid)
       LIMIT 1`,
    );
    this.#count = db.prepare(`SELECT COUNT(*) AS n FROM blocks WHERE piece_cid = ?`);
    const insertRows = (n: number) =>
      db.prepare(
        `INSERT INTO blocks (multihash, piece_cid, block_offset, block_length)
         VALUES ${Array.from({ length: n }, () => "(?, ?, ?, ?)").join(", ")}
         ON CONFLICT (multihash, piece_cid) DO NOTHING`,
      );
    this.#insert = insertRows(1);
    this.#insertMany = insertRows(INSERT_ROWS);
    this.#forgetSome = db.prepare(
      `DELETE FROM blocks WHERE piece_cid = $cid AND multihash IN
         (SELECT multihash FROM blocks WHERE piece_cid = $cid LIMIT ${FORGET_ROWS})
       AND NOT EXISTS (SELECT 1 FROM pieces p WHERE p.cid = $cid)`,
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

  /**
   * Indexes a piece's blocks before the commit that records the piece, a
   * slice per transaction, yielding between slices.
   */
  async indexBlocks(pieceCid: string, blocks: BlockLocations): Promise<void> {
    await this.forgetUnstored(pieceCid);
    let rows = 0; // since the last checkpoint
    const pending: (string | number)[] = []; // a statement's values, INSERT_ROWS rows at most
    const flush = () => {
      if (pending.length === INSERT_ROWS * 4) this.#insertMany.run(...pending);
      else {
        for (let at = 0; at < pending.length; at += 4) {
          this.#insert.run(...pending.slice(at, at + 4));
        }
      }
      pending.length = 0;
    };
    await inSlices(
      blocks,
      (block) => {
        pending.push(block.multihash.toHex(), pieceCid, block.offset, block.length);
        if (pending.length === INSERT_ROWS * 4) flush();
        rows++;
      },
      {
        // A slice's rows are all in its own transaction: what is left goes in before it commits.
        slice: (run) =>
          this.#unsyncedTransaction(() => {
            run();
            flush();
          }),
        afterSlice: () => {
          if (rows < CHECKPOINT_ROWS) return;
          rows = 0;
          this.#db.exec("PRAGMA wal_checkpoint(PASSIVE)");
        },
      },
    );
  }

  /**
   * A slice's transaction, committed without waiting for the disk (in WAL
   * mode a commit under `synchronous = NORMAL` is safe from a crash of the
   * process, not from one of the machine): its rows are invisible until the
   * piece's own commit, which waits for the disk and so makes them durable
   * with it. Set and restored around the one transaction, in one synchronous
   * step: no other commit runs in between. With `FULL` each slice waited for
   * an fsync while holding the event loop (seconds a slice on a busy disk).
   */
  #unsyncedTransaction(run: () => void): void {
    this.#db.exec("PRAGMA synchronous = NORMAL");
    try {
      transaction(this.#db, run);
    } finally {
      this.#db.exec("PRAGMA synchronous = FULL");
    }
  }

  /** Takes back the rows of a piece that has no row (its commit failed, or a crash came first). */
  async forgetUnstored(pieceCid: string): Promise<void> {
    while (Number(this.#forgetSome.run({ cid: pieceCid }).changes) > 0) {
      await yieldToEventLoop();
    }
  }
}
