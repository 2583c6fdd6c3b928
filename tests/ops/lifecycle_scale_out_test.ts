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
import { postgresClient } from "../helpers/postgres.ts";
import {
  COMMAND_FLAGS,
  scaleOutAvailable,
  scaleOutForTests,
  scaleOutServer,
} from "../helpers/scale_out.ts";
import type { ScaleOut } from "../helpers/scale_out.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import {
  DAY_MS,
  LIFECYCLE_ARGS,
  retrieve,
  runLifecycleSuite,
  uploadOk,
} from "./lifecycle_suite.ts";

const ignore = !scaleOutAvailable();
const ROOT = new URL("../..", import.meta.url).pathname;

runLifecycleSuite("postgres + s3", scaleOutServer, { ignore });

/** The scale-out deployment, its instances on the suite's flags and a clock of their own. */
interface Deployment extends ScaleOut {
  /** An instance on the deployment, with its own clock. */
  instance(clock: FakeClock, args?: string[]): Promise<TestServer>;
}

async function withDeployment(fn: (d: Deployment) => Promise<void>): Promise<void> {
  await using deployment = await scaleOutForTests({ args: LIFECYCLE_ARGS });
  await fn(
    Object.assign(deployment, {
      instance: (clock: FakeClock, args: string[] = []) =>
        deployment.startInstance({ clock, args }),
    }),
  );
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
    withDeployment(async ({ databaseUrl, backendFlags, env, instance, command }) => {
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
      await using sql = postgresClient(databaseUrl, { max: 1 });
      const count = async (where: string) =>
        Number((await sql.unsafe(`SELECT COUNT(*) AS n FROM removed_pieces WHERE ${where}`))[0].n);
      const findings = [];
      for (const killAt of [10, 45, 90]) {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            ...COMMAND_FLAGS,
            `${ROOT}main.ts`,
            "gc",
            "--gc-rate",
            "100",
            ...backendFlags,
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
