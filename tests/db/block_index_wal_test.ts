/**
 * The block index is written in slices (db/sqlite/block_records.ts), and its
 * pages are checkpointed every 4,000 rows in a turn of their own, so the WAL
 * never gathers the 1,000 pages whose automatic checkpoint, inside a commit,
 * held the event loop 20-100 ms: indexing 150,000 rows leaves a WAL of about
 * 2 MiB, where SQLite's own checkpoint let it pass 1,000 pages (4 MiB).
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { withTempDir } from "../helpers/files.ts";
import { openDatabase } from "../../src/db/sqlite/database.ts";
import { SqliteBlockRecords } from "../../src/db/sqlite/block_records.ts";
import { MIB } from "../../src/kernel/units.ts";

const ROWS = 150_000;

/** Sorted sha2-256 multihashes, as a CAR upload hands them over. */
function* sortedBlocks(
  rows = ROWS,
): Generator<{ multihash: Uint8Array; offset: number; length: number }> {
  const multihash = new Uint8Array(34);
  multihash[0] = 0x12;
  multihash[1] = 0x20;
  const view = new DataView(multihash.buffer);
  for (let i = 0; i < rows; i++) {
    view.setUint32(2, i * 28_000); // spread over the key space, in order
    view.setUint32(30, i);
    yield { multihash, offset: i * 50, length: 8 };
  }
}

Deno.test("block index: checkpointed every 4,000 rows on its own, so the WAL never reaches SQLite's 1,000-page checkpoint", async () => {
  await withTempDir("wal", async (dir) => {
    const db = openDatabase({ path: `${dir}/storage.db` });
    try {
      const records = new SqliteBlockRecords(db);
      await records.indexBlocks("bafkwalpiece", sortedBlocks());
      const wal = (await Deno.stat(`${dir}/storage.db-wal`)).size;
      assertOk(wal < 3 * MIB, `the WAL grew to ${(wal / MIB).toFixed(1)} MiB`);
      assertEquals(await records.countBlocks("bafkwalpiece"), ROWS);
    } finally {
      db.close();
    }
  });
});

Deno.test("block index: rows go in 64 to a statement, a block listed twice is one row, and a slice's last rows are not left out", async () => {
  await withTempDir("rows", async (dir) => {
    const db = openDatabase({ path: `${dir}/storage.db` });
    try {
      const records = new SqliteBlockRecords(db);
      const copied = Array.from(
        sortedBlocks(1000),
        (b) => ({ ...b, multihash: b.multihash.slice() }),
      );
      const blocks = copied.flatMap((block) => [block, block]); // each listed twice, as a CAR may
      await records.indexBlocks("bafkrowspiece", blocks.slice(0, 2 * 1000 - 2 * 37));
      assertEquals(await records.countBlocks("bafkrowspiece"), 1000 - 37);
    } finally {
      db.close();
    }
  });
});
