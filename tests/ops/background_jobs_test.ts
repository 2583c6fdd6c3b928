/**
 * The runner every background job of the server runs on (src/jobs/runner.ts):
 * runs never overlap, stopping aborts the run in progress and waits for it
 * (unless the job says not to), a job that is off never runs, and each job's
 * health says how its last run ended and when the next is due.
 */
import { assertEquals } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import { BackgroundJobs } from "../../src/jobs/runner.ts";
import type { Job } from "../../src/jobs/runner.ts";

Deno.test("jobs: a run never overlaps the one before, and stop aborts it and waits", async () => {
  let running = 0;
  let most = 0;
  let runs = 0;
  let aborted = false;
  const job: Job = {
    name: "slow",
    intervalMs: 1,
    runAtStart: true,
    async run(signal) {
      runs++;
      most = Math.max(most, ++running);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 30);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          aborted = true;
          resolve();
        }, { once: true });
      });
      running--;
    },
  };
  const jobs = new BackgroundJobs([job]);
  await eventually(() => runs >= 3, "three runs");
  await jobs.stop();
  assertEquals([most, running, aborted], [1, 0, true]);
  const ran = runs;
  await new Promise((resolve) => setTimeout(resolve, 20));
  assertEquals(runs, ran, "no run after stop");
});

Deno.test("jobs: health says how the last run ended and when the next is due; a job at 0 is off", async () => {
  const jobs = new BackgroundJobs([
    {
      name: "flaky",
      intervalMs: 3_600_000,
      runAtStart: true,
      run: () => Promise.reject(new Error("store away")),
    },
    { name: "off", intervalMs: 0, run: () => Promise.reject(new Error("never runs")) },
  ]);
  try {
    await eventually(() => jobs.health()[0].lastRun !== null, "the first run ended");
    const [flaky, ...others] = jobs.health();
    assertEquals(others, []);
    assertEquals([flaky.name, flaky.intervalSeconds, flaky.running], ["flaky", 3600, false]);
    assertEquals([flaky.lastRun?.ok, flaky.lastRun?.error], [false, "store away"]);
    const dueIn = Date.parse(flaky.nextRunAt!) - Date.now();
    assertEquals(dueIn > 3_500_000 && dueIn <= 3_600_000, true, `due in ${dueIn} ms`);
  } finally {
    await jobs.stop();
  }
  assertEquals(jobs.health()[0].nextRunAt, null, "nothing is due once stopped");
});

Deno.test("jobs: stop leaves a run behind when the job says so", async () => {
  let started = false;
  const hung = Promise.withResolvers<void>();
  const jobs = new BackgroundJobs([{
    name: "probe",
    intervalMs: 1,
    runAtStart: true,
    waitOnStop: false,
    run: () => {
      started = true;
      return hung.promise;
    },
  }]);
  await eventually(() => started, "the probe started");
  await jobs.stop();
  assertEquals(jobs.health()[0].running, true);
  hung.resolve();
});
