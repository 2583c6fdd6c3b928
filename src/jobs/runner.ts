/**
 * The one way the server runs work by itself, every so often: garbage
 * collection, the scrub, the sweeps of leftovers and of expired uploads, the
 * watches of marks other processes make, the store probe (server/jobs.ts
 * lists them). Each job is a name, an interval and one run; the runner does
 * the rest the same way for all of them, so none hand-rolls a timer:
 *
 * - a run never overlaps the one before: the next is due an interval after
 *   the last one ended (a slow database does not stack runs up);
 * - the timers are unref'd (a job never keeps a process alive), and an
 *   interval longer than setTimeout's limit (about 24.8 days) waits in steps;
 * - stopping aborts the run in progress (through its signal) and waits for
 *   it, unless the job says its runs may be left behind;
 * - each job remembers its last run (when, and how it ended) and when the
 *   next is due, for /healthz.
 *
 * It knows none of the jobs, and nothing of the server: it imports the
 * kernel alone.
 */
import { toRfc3339 } from "../kernel/clock.ts";
import type { JobHealth, JobRun } from "../kernel/health_wire.ts";

/** setTimeout's longest delay (about 24.8 days); longer intervals wait in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Job {
  /** How /healthz names it, e.g. "gc". */
  name: string;
  /** From the end of one run to the start of the next; 0 or less: the job is off. */
  intervalMs: number;
  /** Runs once right away (in the background), instead of an interval after the start. */
  runAtStart?: boolean;
  /**
   * Whether stop() waits for a run in progress (default true). A probe or a
   * poll whose answer nobody needs once the server stops says false: a store
   * or database that hangs must not hold the shutdown up.
   */
  waitOnStop?: boolean;
  /**
   * One run. It rejects when it failed (after saying why in the log: the
   * runner only remembers it, for /healthz), and soon after the signal aborts.
   */
  run(signal: AbortSignal): Promise<void>;
}

/** One job, scheduled: started by the constructor, ended by stop(). */
export class ScheduledJob {
  readonly #job: Job;
  readonly #stop = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | null = null;
  #nextRunAt: number | null = null;
  #lastRun: JobRun | null = null;

  constructor(job: Job) {
    this.#job = job;
    if (job.runAtStart) this.#start();
    else this.#waitUntil(Date.now() + job.intervalMs);
  }

  get name(): string {
    return this.#job.name;
  }

  /** Stops scheduling, aborts a run in progress and (unless the job says not to) waits for it. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("server stopping"));
    clearTimeout(this.#timer);
    this.#nextRunAt = null;
    if (this.#job.waitOnStop !== false) await this.#running;
  }

  health(): JobHealth {
    return {
      name: this.#job.name,
      intervalSeconds: this.#job.intervalMs / 1000,
      running: this.#running !== null,
      lastRun: this.#lastRun,
      nextRunAt: this.#nextRunAt === null ? null : toRfc3339(this.#nextRunAt),
    };
  }

  #waitUntil(dueAt: number): void {
    this.#nextRunAt = dueAt;
    const delay = Math.min(Math.max(0, dueAt - Date.now()), MAX_TIMER_MS);
    this.#timer = setTimeout(() => {
      if (Date.now() < dueAt) this.#waitUntil(dueAt);
      else this.#start();
    }, delay);
    Deno.unrefTimer(this.#timer);
  }

  #start(): void {
    this.#nextRunAt = null;
    // A reaction, so it runs after the assignment even when the job throws at once.
    this.#running = this.#runOnce().finally(() => {
      this.#running = null;
      if (!this.#stop.signal.aborted) this.#waitUntil(Date.now() + this.#job.intervalMs);
    });
  }

  async #runOnce(): Promise<void> {
    const startedAt = Date.now();
    let error: string | null = null;
    try {
      await this.#job.run(this.#stop.signal);
    } catch (failure) {
      error = failure instanceof Error ? failure.message : String(failure);
    }
    this.#lastRun = {
      startedAt: toRfc3339(startedAt),
      finishedAt: toRfc3339(Date.now()),
      ok: error === null,
      error,
    };
  }
}

/** The server's list of jobs, started together, stopped together, reported together. */
export class BackgroundJobs {
  readonly #scheduled: ScheduledJob[];

  /** Starts every job that is on (an interval above 0); the others are not reported. */
  constructor(jobs: readonly Job[]) {
    this.#scheduled = jobs.filter((job) => job.intervalMs > 0).map((job) => new ScheduledJob(job));
  }

  /** Stops them all at once; resolves once each has (see Job.waitOnStop). */
  async stop(): Promise<void> {
    await Promise.all(this.#scheduled.map((job) => job.stop()));
  }

  /** Each running job, in the order of the list. */
  health(): JobHealth[] {
    return this.#scheduled.map((job) => job.health());
  }
}
