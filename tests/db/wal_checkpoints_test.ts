/**
 * The WAL's checkpoints run in a Worker with its own connection, never in a
 * commit of the serving connection (db/sqlite/wal_checkpoints.ts): a commit
 * that takes the WAL past SQLite's 1000 pages leaves the database file as it
 * was, and the worker copies the pages in soon after. Stopped, it gives the
 * checkpoints back to the serving connection. The server's own database
 * runs so.
 */
import { assertEquals } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import { startTestServer } from "../helpers/server.ts";
import { openDatabase, transaction } from "../../src/db/sqlite/database.ts";
import type { Database } from "../../src/db/sqlite/database.ts";
import { FALLBACK_PAGES, WalCheckpoints } from "../../src/db/sqlite/wal_checkpoints.ts";

/** About 1,500 pages of rows, in commits of 100 rows. */
function writePages(db: Database): void {
  db.exec("CREATE TABLE IF NOT EXISTS filler (bytes BLOB NOT NULL)");
  const insert = db.prepare("INSERT INTO filler (bytes) VALUES (randomblob(3000))");
  for (let commit = 0; commit < 15; commit++) {
    transaction(db, () => {
      for (let row = 0; row < 100; row++) insert.run();
    });
  }
}

function autocheckpoint(db: Database): number {
  return Number(
    (db.prepare("PRAGMA wal_autocheckpoint").get() as Record<string, number>)
      .wal_autocheckpoint,
  );
}

async function withDatabase(run: (db: Database, path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "wal-checkpoints-" });
  const path = `${dir}/storage.db`;
  const db = openDatabase({ path });
  try {
    await run(db, path);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("WAL checkpoints: a commit past 1000 pages leaves the database file alone; the worker copies the pages in", async () => {
  await withDatabase(async (db, path) => {
    // A worker that waits an hour: whatever reaches the file meanwhile, a commit put there.
    const idle = new WalCheckpoints(db, path, { intervalMs: 3_600_000 });
    assertEquals(await idle.running(), true);
    const before = (await Deno.stat(path)).size;
    writePages(db);
    assertEquals((await Deno.stat(path)).size, before, "no commit copied the WAL into the file");
    await idle.stop();
    assertEquals(autocheckpoint(db), 1000, "stopped, the checkpoints are the connection's again");

    const busy = new WalCheckpoints(db, path, { intervalMs: 20 });
    assertEquals(await busy.running(), true);
    await eventually(
      async () => (await Deno.stat(path)).size > before + 1000 * 4096,
      "the worker copied the WAL's pages into the database file",
    );
    await busy.stop();
  });
});

Deno.test("WAL checkpoints: a worker that cannot open the database gives the checkpoints back at once", async () => {
  await withDatabase(async (db, path) => {
    const failed = new WalCheckpoints(db, `${path}.missing-dir/none.db`);
    assertEquals(await failed.running(), false);
    assertEquals(autocheckpoint(db), 1000);
    await failed.stop();
  });
});

Deno.test("WAL checkpoints: the server's database checkpoints in the worker only", async () => {
  await using server = await startTestServer();
  assertEquals(autocheckpoint(server.server.db), FALLBACK_PAGES);
});
