/**
 * The lifecycle on the scale-out deployment: the suite (lifecycle_suite.ts)
 * against a real PostgreSQL and a real S3 (Ceph radosgw), then what only a
 * shared deployment has to get right: one sweep at a time across instances
 * and `main.ts gc`, a removal by one instance reaching another's cache, and
 * `main.ts gc` SIGKILLed mid-sweep, with what `main.ts scrub` finds after.
 *
 * Without PostgreSQL or S3 the tests are ignored, except in CI (CI=true).
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { runMain } from "../helpers/main_process.ts";
import type { MainRun } from "../helpers/main_process.ts";
import { postgresAvailable, postgresClient, postgresForTests } from "../helpers/postgres.ts";
import type { TestDatabase } from "../helpers/postgres.ts";
import { s3ForTests, s3ServerFlags, s3ServerKeys, s3UnavailableReason } from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import {
  DAY_MS,
  LIFECYCLE_ARGS,
  retrieve,
  runLifecycleSuite,
  uploadOk,
} from "./lifecycle_suite.ts";

const ignore = !postgresAvailable() || s3UnavailableReason() !== null;
const ROOT = new URL("../..", import.meta.url).pathname;

/** A server on a fresh database and bucket, disposed with them. */
async function scaleOutServer(
  options: Parameters<Parameters<typeof runLifecycleSuite>[1]>[0],
): Promise<TestServer> {
  const pg = await postgresForTests();
  const bucket = await s3ForTests();
  const server = await startTestServer({
    ...options,
    args: [...options.args, "--database", pg.url, ...s3ServerFlags(bucket)],
    env: s3ServerKeys(bucket),
  });
  return {
    ...server,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      await bucket[Symbol.asyncDispose]();
      await pg[Symbol.asyncDispose]();
    },
  };
}

runLifecycleSuite("postgres + s3", scaleOutServer, { ignore });

interface Deployment {
  pg: TestDatabase;
  bucket: TestBucket;
  flags: string[];
  env: Record<string, string>;
  /** An instance on the deployment, with its own clock. */
  instance(clock: FakeClock, args?: string[]): Promise<TestServer>;
  /** `main.ts …args` on the deployment: the network and the environment only. */
  command(args: string[]): Promise<MainRun>;
}

async function withDeployment(fn: (d: Deployment) => Promise<void>): Promise<void> {
  await using pg = await postgresForTests();
  await using bucket = await s3ForTests();
  const flags = ["--database", pg.url, ...s3ServerFlags(bucket)];
  const env = s3ServerKeys(bucket);
  await fn({
    pg,
    bucket,
    flags,
    env,
    instance: (clock, args = []) =>
      startTestServer({ clock, args: [...LIFECYCLE_ARGS, ...args, ...flags], env }),
    command: (args) =>
      runMain([...args, ...flags], { flags: ["--allow-net", "--allow-env=STORAGE_*,PG*"], env }),
  });
}

Deno.test({
  name: "scale-out gc: one sweep at a time across instances and main.ts gc",
  ignore,
  fn: () =>
    withDeployment(async ({ instance, command }) => {
      const clock = new FakeClock("2026-01-01T00:00:00Z");
      // A slow sweep (2 pieces a second) on one instance holds the turn for a while.
      await using slow = await instance(clock, ["--gc-rate", "2"]);
      await using other = await instance(clock);
      for (let i = 0; i < 8; i++) await uploadOk(slow, seededBytes(500 + i, 40 + i));
      clock.advance(12 * DAY_MS + 1000);
      const sweeping = slow.server.gc.sweep();
      await eventually(
        async () => (await (await slow.get("/healthz")).json()).gc.running === true,
        "the slow sweep running",
      );
      assertEquals(await other.server.gc.sweep(), null, "the other instance skips its turn");
      const refused = await command(["gc", "--dry-run"]);
      assertEquals(refused.code, 2, refused.stdout);
      assertMatch(refused.stderr, /^error: Another sweep is running/);
      const report = await sweeping;
      assertEquals(report?.removedPieces, 8);
      // The turn is free again.
      assertEquals((await other.server.gc.sweep())?.removedPieces, 0);
    }),
});

Deno.test({
  name:
    "scale-out gc: main.ts gc lists an orphan in the bucket, removes it after the grace period; instances show that sweep",
  ignore,
  fn: () =>
    withDeployment(async ({ instance, command }) => {
      await using server = await instance(new FakeClock("2026-01-01T00:00:00Z"));
      // An object no row names, as a crash before removals were crash-safe left them.
      const { store } = server.server;
      const staged = await store.stage(ReadableStream.from([seededBytes(777, 60)]), {
        expectedBytes: 777,
      });
      await staged.commit("bafkorphanbucket1");
      const gcJson = async (args: string[]) => {
        const run = await command(["gc", "--json", ...args]);
        assertEquals(run.code, 0, run.stderr);
        return JSON.parse(run.stdout);
      };
      const young = await gcJson(["--dry-run"]);
      assertEquals([young.orphans, young.youngOrphans], [[], 1], "written within the grace period");
      // The grace period (7 days by default) later, by the bucket's clock.
      const later = new Date(Date.now() + 8 * DAY_MS).toISOString();
      const due = await gcJson(["--dry-run", "--as-of", later]);
      assertEquals(due.orphans, [{ cid: "bafkorphanbucket1", size: 777 }]);
      assertEquals((await store.stat("bafkorphanbucket1"))?.size, 777, "a dry run removes nothing");
      const removed = await gcJson(["--as-of", later]);
      assertEquals([removed.removedOrphans, removed.removedOrphanBytes], [1, 777]);
      assertEquals(await store.stat("bafkorphanbucket1"), null);
      // The sweep is the deployment's last, whoever ran it: /healthz and /metrics say so.
      const health = (await (await server.get("/healthz")).json()).gc;
      assertEquals(health.lastSweep.removedOrphans, 1);
      assertEquals(health.lastSweep.finishedAt, removed.finishedAt);
      const metrics = await (await server.get("/metrics")).text();
      const seconds = Date.parse(removed.finishedAt) / 1000;
      assertMatch(metrics, new RegExp(`^storage_gc_last_sweep_timestamp_seconds ${seconds}$`, "m"));
    }),
});

Deno.test({
  name: "scale-out gc: a piece another instance removed stops being served from this one's cache",
  ignore,
  fn: () =>
    withDeployment(async ({ instance }) => {
      const clock = new FakeClock("2026-01-01T00:00:00Z");
      await using serving = await instance(clock);
      await using sweeper = await instance(clock);
      const deal = await uploadOk(serving, seededBytes(900, 50));
      assertEquals((await retrieve(serving, deal.cid)).status, 200); // now in its cache
      assertEquals((await retrieve(serving, deal.cid)).status, 200);
      clock.advance(12 * DAY_MS + 1000);
      assertEquals((await sweeper.server.gc.sweep())?.removedPieces, 1);
      await eventually(
        async () => (await serving.get(`/p/${deal.cid}`)).status === 410,
        "the serving instance answers 410 for it",
      );
    }),
});

Deno.test({
  name:
    "scale-out gc: main.ts gc SIGKILLed mid-sweep three times; scrub finds nothing missing or unnamed",
  ignore,
  fn: () =>
    withDeployment(async ({ pg, flags, env, instance, command }) => {
      const pieces = 120;
      const clock = new FakeClock("2026-01-01T00:00:00Z");
      {
        await using server = await instance(clock);
        for (let i = 0; i < pieces; i++) await uploadOk(server, seededBytes(300 + i, 1000 + i));
        await eventually(
          () => server.server.services.digests.status().backlog === 0,
          "every digest recorded",
        );
      }
      await using sql = postgresClient(pg.url, { max: 1 });
      const count = async (where: string) =>
        Number((await sql.unsafe(`SELECT COUNT(*) AS n FROM removed_pieces WHERE ${where}`))[0].n);
      const findings = [];
      for (const killAt of [10, 45, 90]) {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-net",
            "--allow-env=STORAGE_*,PG*",
            `${ROOT}main.ts`,
            "gc",
            "--gc-rate",
            "100",
            ...flags,
          ],
          env,
          stdout: "null",
          stderr: "null",
        }).spawn();
        try {
          await eventually(async () => await count("true") >= killAt, `${killAt} removals begun`, {
            timeoutMs: 30_000,
          });
        } finally {
          child.kill("SIGKILL");
          await child.status;
        }
        const scrub = await command(["scrub"]);
        assertOk(scrub.code === 0 || scrub.code === 1, scrub.stderr);
        const report = JSON.parse(scrub.stdout);
        findings.push({
          killedAfter: await count("true"),
          unfinished: await count("removed_at IS NULL"),
          missing: report.missing.length,
          corrupt: report.corrupt.length,
          orphans: report.orphans.length,
          awaitingRemoval: report.awaitingRemoval.length,
        });
        assertEquals([report.missing, report.corrupt, report.orphans], [[], [], []]);
      }
      const last = await command(["gc", "--json"]);
      assertEquals(last.code, 0, last.stderr);
      const after = JSON.parse((await command(["scrub"])).stdout);
      assertEquals([after.missing, after.corrupt, after.orphans, after.awaitingRemoval], [
        [],
        [],
        [],
        [],
      ]);
      assertEquals(after.removed, pieces);
      assertEquals(await count("removed_at IS NULL"), 0);
      console.log(
        JSON.stringify({ findings, resumedByLastSweep: JSON.parse(last.stdout).resumed }),
      );
    }),
});
