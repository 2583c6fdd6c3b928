/**
 * Garbage collection as the server runs it (services.ts builds it with the
 * pieces' services): the collector (ops/gc_service.ts: one sweep at a time
 * across instances; the "gc" job of jobs.ts asks for one every
 * --gc-interval), the piece removal it drives (catalog/piece_removal.ts), and
 * what /metrics reads of it. The watch of removals made by other processes
 * is a job of its own (jobs.ts).
 */
import type { Config } from "../config/mod.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import type { Metadata } from "../backends/metadata.ts";
import type { GcSource } from "../metrics/scrape_gauges.ts";
import { StoredTotals } from "../metrics/stored_totals.ts";
import { GarbageCollector } from "../ops/gc_service.ts";
import type { PieceStore } from "../driver/driver.ts";
import { PieceRemoval } from "../catalog/piece_removal.ts";

export interface GarbageCollectionDeps {
  config: Config;
  clock: Clock;
  logger: Logger;
  metadata: Metadata;
  store: PieceStore;
  /** Between two sweeps of this server (its "gc" job); 0 = none. */
  intervalMs: number;
  /** Told of every piece this server removes: stop answering it from memory. */
  distrust(cid: string): void;
}

export function buildGarbageCollection(deps: GarbageCollectionDeps): GarbageCollector {
  const { config, metadata, store, logger } = deps;
  const { lifecycle } = metadata;
  return new GarbageCollector({
    store,
    lifecycle,
    removal: new PieceRemoval({
      store,
      records: metadata.catalog,
      lifecycle,
      cidLocks: metadata.cidLocks,
    }),
    sweepTurn: metadata.sweepTurn,
    clock: deps.clock,
    logger,
    graceDays: config.retentionGraceDays,
    removalsPerSecond: config.gcRemovalsPerSecond,
    intervalMs: deps.intervalMs,
    onRemoved: deps.distrust,
  });
}

/** What /metrics reads of garbage collection; null without a database on disk. */
export function gcMetricsSource(gc: GarbageCollector, metadata: Metadata): GcSource | null {
  if (!metadata.persistent) return null;
  return {
    totals: () => gc.totals,
    // A scan like the stored totals': counted at scrape time, reused for a minute.
    backlog: new StoredTotals({ count: () => gc.backlog(), ttlMs: 60_000 }),
    lastSweep: () => metadata.lifecycle.lastSweep(),
  };
}
