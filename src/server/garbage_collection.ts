/**
 * Garbage collection as the server runs it (services.ts builds it with the
 * pieces' services): the collector (ops/gc_service.ts: sweeps every
 * --gc-interval, one at a time across instances), the piece removal it drives
 * (catalog/piece_removal.ts), a watch of removals made by other processes so
 * the small-piece cache stops answering them, and what /metrics reads of it.
 */
import type { Config } from "../config/mod.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import type { Metadata } from "../backends/metadata.ts";
import type { GcSource } from "../metrics/scrape_gauges.ts";
import { StoredTotals } from "../metrics/stored_totals.ts";
import { GarbageCollector } from "../ops/gc_service.ts";
import { PieceMarkWatch } from "../catalog/corrupt_watch.ts";
import type { PieceStore } from "../driver/driver.ts";
import { PieceRemoval } from "../catalog/piece_removal.ts";

export interface GarbageCollectionDeps {
  config: Config;
  clock: Clock;
  logger: Logger;
  metadata: Metadata;
  store: PieceStore;
  /** Between two sweeps of this server; 0 = none. */
  intervalMs: number;
  /** How often removals by other processes are polled. */
  watchIntervalMs: number;
  /** Told of every piece removed, here or elsewhere: stop answering it from memory. */
  distrust(cid: string): void;
}

export function buildGarbageCollection(deps: GarbageCollectionDeps) {
  const { config, metadata, store, logger } = deps;
  const { lifecycle } = metadata;
  // Removals by `main.ts gc` or another instance; this server's own tell retrieval at once.
  const removalWatch = new PieceMarkWatch({
    marksAfter: (mark) => lifecycle.removalMarksAfter(mark),
    startAt: () => lifecycle.lastRemovalMark(),
    onMarked: deps.distrust,
    intervalMs: deps.watchIntervalMs,
    onError: (error) => logger.warn("cannot read piece removals", { error: String(error) }),
  });
  const gc = new GarbageCollector({
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
    // A server without a usable data directory has nothing to sweep.
    intervalMs: metadata.persistent ? deps.intervalMs : 0,
    onRemoved: deps.distrust,
  });
  return {
    gc,
    async stop() {
      removalWatch.stop();
      await gc.stop();
    },
  };
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
