/**
 * `main.ts gc` on a data directory (SQLite and pieces on disk), as the
 * operator runs it: a real process with the start task's permissions. What a
 * dry run lists and a sweep removes (pieces, their sizes, orphans), --as-of,
 * one line and status 2 for what it refuses, and a sweep SIGKILLed at
 * several points: scrub then finds no row naming missing bytes and no file
 * no row names, and the next sweep finishes what was begun.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { runMain } from "../helpers/main_process.ts";
import type { MainRun } from "../helpers/main_process.ts";
import { pieceFile, storedPieces } from "../helpers/pieces.ts";
import { startTestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { startTaskFlags } from "../../scripts/lib/spawn_server.ts";
import { cidOf, DAY_MS, uploadOk } from "./lifecycle_suite.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** A data directory with `expired` pieces whose deals ended long ago and one that is active. */
async function dataDirWith(expired: number): Promise<{ dataDir: string; recent: string }> {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-gc-cmd-" });
  const clock = new FakeClock("2026-01-01T00:00:00Z");
  await using server = await startTestServer({
    clock,
    dataDir,
    args: ["--sponsored-term-days", "10"],
  });
  for (let i = 0; i < expired; i++) await uploadOk(server, seededBytes(1000 + i, i));
  clock.set(new Date().toISOString());
  const recent = (await uploadOk(server, seededBytes(4321, 99_999))).cid;
  // The digests of the uploads are recorded by now: a scrub checks them.
  await eventually(
    () => server.server.services.digests.status().backlog === 0,
    "every digest recorded",
  );
  return { dataDir, recent };
}

/** The cids of the pieces stored in a data directory. */
async function storedCids(dataDir: string): Promise<string[]> {
  return (await storedPieces(dataDir)).map((path) => path.slice(path.lastIndexOf("/") + 1));
}

function gc(dataDir: string, args: string[] = []): Promise<MainRun> {
  return runMain(["gc", "--data-dir", dataDir, ...args], { dataDir });
}

async function scrub(dataDir: string) {
  const run = await runMain(["scrub", "--data-dir", dataDir], { dataDir });
  assertOk(run.code === 0 || run.code === 1, run.stderr);
  return JSON.parse(run.stdout);
}

Deno.test("gc: a dry run lists each piece it would remove, with its size; gc removes them", async () => {
  const { dataDir, recent } = await dataDirWith(3);
  try {
    const dry = await gc(dataDir, ["--dry-run", "--json"]);
    assertEquals(dry.code, 0, dry.stderr);
    const listed = JSON.parse(dry.stdout);
    assertEquals(listed.dryRun, true);
    const expected = await Promise.all(
      [0, 1, 2].map(async (i) => ({ cid: await cidOf(seededBytes(1000 + i, i)), size: 1000 + i })),
    );
    const byCid = (a: { cid: string }, b: { cid: string }) => a.cid < b.cid ? -1 : 1;
    assertEquals(listed.pieces, expected.sort(byCid));
    assertEquals([listed.removedPieces, listed.removedBytes], [3, 3003]);
    assertEquals((await storedPieces(dataDir)).length, 4, "a dry run removes nothing");

    const text = await gc(dataDir);
    assertEquals(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split("\n");
    assertEquals(lines.slice(0, 3), expected.map(({ cid, size }) => `removed ${cid} ${size}`));
    assertMatch(lines[3], /^removed 3 pieces \(3003 bytes\) and 0 orphans \(0 bytes\); judged/);
    assertEquals(await storedCids(dataDir), [recent]);

    // Judged as at 30 days from now, the recent piece's deal has ended too.
    const later = new Date(Date.now() + 30 * DAY_MS).toISOString();
    const ahead = JSON.parse((await gc(dataDir, ["--dry-run", "--json", "--as-of", later])).stdout);
    assertEquals(ahead.pieces, [{ cid: recent, size: 4321 }]);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("gc: an orphan is listed once older than the grace period, then removed", async () => {
  const { dataDir } = await dataDirWith(0);
  try {
    const orphan = pieceFile(dataDir, "bafkorphanfile01");
    await Deno.mkdir(orphan.slice(0, orphan.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(orphan, seededBytes(777, 5));
    const now = JSON.parse((await gc(dataDir, ["--dry-run", "--json"])).stdout);
    assertEquals([now.orphans, now.youngOrphans], [[], 1]);
    const later = new Date(Date.now() + 8 * DAY_MS).toISOString();
    const due = JSON.parse((await gc(dataDir, ["--dry-run", "--json", "--as-of", later])).stdout);
    assertEquals(due.orphans, [{ cid: "bafkorphanfile01", size: 777 }]);
    const removed = JSON.parse((await gc(dataDir, ["--json", "--as-of", later])).stdout);
    assertEquals([removed.removedOrphans, removed.removedOrphanBytes], [1, 777]);
    assertOk(!(await storedCids(dataDir)).includes("bafkorphanfile01"));
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("gc: refuses a data directory a server holds, and a time that is not one, in one line", async () => {
  await using server = await startTestServer();
  const held = await gc(server.dataDir);
  assertEquals(held.code, 2);
  assertMatch(held.stderr, /^error: .*in use by process/);
  const badTime = await gc(server.dataDir, ["--as-of", "next tuesday"]);
  assertEquals(badTime.code, 2);
  assertMatch(badTime.stderr, /^error: --as-of must be an RFC 3339 time/);
});

Deno.test("gc: SIGKILLed mid-sweep three times, scrub finds nothing missing and nothing unnamed", async () => {
  const pieces = 240;
  const { dataDir, recent } = await dataDirWith(pieces);
  const db = new DatabaseSync(`${dataDir}/storage.db`, { readOnly: true });
  const count = (where: string) =>
    Number(
      (db.prepare(`SELECT COUNT(*) AS n FROM removed_pieces WHERE ${where}`).get() as { n: number })
        .n,
    );
  const findings = [];
  try {
    for (const killAt of [20, 90, 170]) {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...await startTaskFlags(dataDir),
          `${ROOT}main.ts`,
          "gc",
          "--data-dir",
          dataDir,
          "--gc-rate",
          "200",
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        await eventually(() => count("1 = 1") >= killAt, `${killAt} removals begun`, {
          timeoutMs: 30_000,
        });
      } finally {
        child.kill("SIGKILL");
        await child.status;
      }
      const report = await scrub(dataDir);
      findings.push({
        killedAfter: count("1 = 1"),
        unfinished: count("removed_at IS NULL"),
        missing: report.missing.length,
        corrupt: report.corrupt.length,
        orphans: report.orphans.length,
        awaitingRemoval: report.awaitingRemoval.length,
      });
      assertEquals([report.missing, report.corrupt, report.orphans], [[], [], []]);
    }
    const finished = await gc(dataDir, ["--json"]);
    assertEquals(finished.code, 0, finished.stderr);
    const last = JSON.parse(finished.stdout);
    const after = await scrub(dataDir);
    assertEquals([after.missing, after.corrupt, after.orphans, after.awaitingRemoval], [
      [],
      [],
      [],
      [],
    ]);
    assertEquals(after.removed, pieces);
    assertEquals(await storedCids(dataDir), [recent]);
    assertEquals(count("removed_at IS NULL"), 0, "every removal finished");
    console.log(JSON.stringify({ findings, resumedByLastSweep: last.resumed }));
  } finally {
    db.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
