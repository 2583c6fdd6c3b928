/**
 * Everything the server runs by itself, every so often, in one list: which
 * jobs there are, how often each runs (the operator's flags where there is
 * one, defaults otherwise; tests shorten them through startServer's
 * `jobIntervals`), and what one run of each does. services.ts builds the
 * list from the pieces' services and hands it to the runner
 * (jobs/runner.ts), which starts, stops and reports every job alike; /healthz
 * shows them.
 */
import type { Config } from "../config/mod.ts";
import type { Logger } from "../kernel/log.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Metadata } from "../backends/metadata.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { Job } from "../jobs/runner.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import { LeftoverSweep } from "../catalog/leftover_sweep.ts";
import { PieceMarkWatch } from "../catalog/corrupt_watch.ts";
import type { StoreReachability } from "../catalog/reachability.ts";
import type { GarbageCollector } from "../ops/gc_service.ts";
import { loggedScrubPass } from "../ops/periodic_scrub.ts";
import { ExpirySweep } from "../uploads/expiry_sweep.ts";
import type { ResumableUploads } from "../uploads/resumable.ts";
import type { Handoff } from "../handoff/service.ts";

export const JOB_NAMES = [
  "store-probe",
  "corrupt-watch",
  "removal-watch",
  "leftover-sweep",
  "resumable-expiry",
  "gc",
  "scrub",
  "handoff",
] as const;

export type JobName = typeof JOB_NAMES[number];

/** Intervals in ms, by job: overrides of the defaults (tests); 0 turns a job off. */
export type JobIntervals = Partial<Record<JobName, number>>;

const HOUR_MS = 3_600_000;

/** Each job's interval: the defaults and the flags, then the overrides. */
export function jobIntervalsOf(
  config: Config,
  overrides: JobIntervals = {},
): Record<JobName, number> {
  const intervals: Record<JobName, number> = {
    // How soon answers from the small-piece cache stop for a store gone or a piece marked.
    "store-probe": 1000,
    "corrupt-watch": 1000,
    "removal-watch": 1000,
    // As often as a dead instance is found (its heartbeats silent for 30 s): its leftovers follow.
    "leftover-sweep": 30_000,
    "resumable-expiry": 60_000,
    gc: config.gcIntervalHours * HOUR_MS,
    scrub: config.scrubIntervalHours * HOUR_MS,
    // Curio's steps take an epoch (30 s) or more; a run costs one request per open call.
    handoff: config.handoff.mode === "off" ? 0 : 2000,
  };
  for (const name of JOB_NAMES) {
    const override = overrides[name];
    if (override !== undefined) intervals[name] = override;
  }
  return intervals;
}

/** What the jobs work on: the pieces' services, built by services.ts. */
export interface ServerJobsDeps {
  config: Config;
  clock: Clock;
  logger: Logger;
  metadata: Metadata;
  store: PieceStore;
  /** Each job's interval (jobIntervalsOf), 0 for those this server does not run. */
  intervals: Record<JobName, number>;
  hashPool: HashWorkerPool | null;
  catalog: PieceCatalog;
  reachability: StoreReachability;
  resumable: ResumableUploads;
  gc: GarbageCollector;
  /** Told of every piece marked corrupt or removed, here or elsewhere: stop answering it from memory. */
  distrust(cid: string): void;
  /** The hand-off to a storage provider; null with --handoff off (then it is no job at all). */
  handoff: Handoff | null;
}

/** The server's jobs, in the order /healthz lists them. */
export function serverJobs(deps: ServerJobsDeps): Job[] {
  const { config, logger, metadata, store, intervals, distrust } = deps;
  const job = (name: JobName, spec: Omit<Job, "name" | "intervalMs">): Job => ({
    name,
    intervalMs: intervals[name],
    ...spec,
  });
  const corruptWatch = new PieceMarkWatch({
    marksAfter: (mark) => metadata.catalog.corruptMarksAfter(mark),
    onMarked: distrust,
    onError: (error) => logger.warn("cannot read corrupt-piece marks", { error: String(error) }),
  });
  // Removals by `main.ts gc` or another instance; this server's own tell retrieval at once.
  const removalWatch = new PieceMarkWatch({
    marksAfter: (mark) => metadata.lifecycle.removalMarksAfter(mark),
    startAt: () => metadata.lifecycle.lastRemovalMark(),
    onMarked: distrust,
    onError: (error) => logger.warn("cannot read piece removals", { error: String(error) }),
  });
  const leftoverSweep = new LeftoverSweep({
    store,
    liveWriters: metadata.liveWriters,
    settle: () => deps.catalog.settleUnrecorded(),
    logger,
  });
  const expirySweep = new ExpirySweep({ uploads: deps.resumable, logger });
  return [
    // A probe or a poll left running at shutdown is harmless; one that hangs must not hold it up.
    job("store-probe", { waitOnStop: false, run: () => deps.reachability.probe() }),
    job("corrupt-watch", { runAtStart: true, waitOnStop: false, run: (s) => corruptWatch.poll(s) }),
    job("removal-watch", { runAtStart: true, waitOnStop: false, run: (s) => removalWatch.poll(s) }),
    // At once too: a store that cannot be reached at the start makes the server unready, not fail.
    job("leftover-sweep", { runAtStart: true, run: () => leftoverSweep.sweep() }),
    job("resumable-expiry", { run: (signal) => expirySweep.sweep(signal) }),
    job("gc", { run: async (signal) => void await deps.gc.sweep({ signal }) }),
    job("scrub", {
      run: loggedScrubPass({
        store,
        records: metadata.catalog,
        bytesPerSecond: config.scrubBytesPerSecond,
        hashPool: deps.hashPool,
        clock: deps.clock,
        logger,
        onFailure: (failure) => distrust(failure.cid),
      }),
    }),
    // Only with --handoff pdp: off, the list (and /healthz) stays as it was.
    ...(deps.handoff
      ? [job("handoff", { runAtStart: true, run: (s) => deps.handoff!.run(s) })]
      : []),
  ];
}
