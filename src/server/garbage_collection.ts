/**
 * What /metrics reads of garbage collection as the server runs it. The
 * collector itself is built as `main.ts gc` builds it (ops/gc_service.ts's
 * garbageCollectorOf, called by services.ts); the "gc" job of jobs.ts asks it
 * for a sweep every --gc-interval, and the "removal-watch" job hears of
 * removals other processes made.
 */
import type { Metadata } from "../backends/metadata.ts";
import type { GcSource } from "../metrics/scrape_gauges.ts";
import { StoredTotals } from "../metrics/stored_totals.ts";
import type { GarbageCollector } from "../ops/gc_service.ts";

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
