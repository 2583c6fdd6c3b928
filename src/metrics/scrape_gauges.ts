/**
 * The gauges of the service, read from their sources when Prometheus scrapes
 * and never on a request's path: the digest backlog, the hash pool's queue,
 * uploads in flight, stored pieces and bytes, garbage collection (removed
 * so far, the backlog, the last sweep), the database's files, free disk, the
 * connections (connection_gauges.ts), the process's memory and its event
 * loop's stalls (event_loop_metrics.ts). A source that
 * is absent (no data directory bound, no hash pool, no statfs permission)
 * leaves its family out.
 */
import type { PieceDigests } from "../catalog/digests.ts";
import type { DiskSpace } from "./disk_space.ts";
import { registerConnectionGauges } from "./connection_gauges.ts";
import type { ConnectionStatsSource } from "./connection_gauges.ts";
import type { MetricsRegistry } from "./registry.ts";
import { registerEventLoopMetrics } from "./event_loop_metrics.ts";
import type { EventLoopDelay } from "../kernel/event_loop_delay.ts";
import type { StoredTotalsValue } from "./stored_totals.ts";
import { type HandoffSource, registerHandoffGauges } from "./handoff_gauges.ts";

export interface ScrapeSources {
  digests: Pick<PieceDigests, "status">;
  /** The hashing Workers; null when pieces are hashed on the main thread. */
  hashPool: { readonly size: number; readonly segmentsInFlight: number } | null;
  uploads: { readonly inFlight: number };
  /** Pieces and bytes in the database (cached); null without a database on disk. */
  storedTotals: { read(): Promise<StoredTotalsValue> } | null;
  /** The database's files (storage.db, storage.db-wal); empty without a data directory. */
  databaseFiles: readonly { kind: string; path: string }[];
  /** The data directory's file system; null when unbound or statfs is not permitted. */
  diskSpace: (() => Promise<DiskSpace>) | null;
  /** The accept loop's counts, attached once the listener is bound. */
  connections: ConnectionStatsSource;
  /** Garbage collection; null without a database on disk. */
  gc: GcSource | null;
  /** The hand-off to a storage provider; null with --handoff off (its families are left out). */
  handoff?: HandoffSource | null;
  /** How long the event loop is held (its timer runs whether or not metrics are on). */
  eventLoop: EventLoopDelay;
}

/** What garbage collection tells the metrics (ops/gc_service.ts). */
export interface GcSource {
  /** Removed by this process's sweeps since it started. */
  totals(): { pieces: number; bytes: number; orphans: number; orphanBytes: number; sweeps: number };
  /** Pieces past their grace period not removed yet (cached). */
  backlog: { read(): Promise<StoredTotalsValue> };
  /** The last sweep that finished, by any process; null: none yet. */
  lastSweep(): Promise<{ finishedAt: string } | null>;
}

/** A family of one unlabelled sample, read at scrape time. */
interface SingleValue {
  name: string;
  help: string;
  /** Default "gauge"; "counter" for a total another object keeps. */
  type?: "gauge" | "counter";
  read(): number | Promise<number>;
}

function registerSingle(registry: MetricsRegistry, family: SingleValue): void {
  registry.collected({
    name: family.name,
    help: family.help,
    type: family.type ?? "gauge",
    collect: async () => [{ value: await family.read() }],
  });
}

export function registerScrapeGauges(registry: MetricsRegistry, sources: ScrapeSources): void {
  const single = (family: SingleValue) => registerSingle(registry, family);
  const { digests, uploads, hashPool, storedTotals, diskSpace } = sources;
  single({
    name: "storage_digest_backlog",
    help: "Pieces acknowledged but not yet hashed (SHA-256 runs after the answer)",
    read: () => digests.status().backlog,
  });
  single({
    name: "storage_digest_failures_total",
    help: "Pieces that could not be read back for hashing since start",
    type: "counter",
    read: () => digests.status().failures,
  });
  single({
    name: "storage_uploads_in_flight",
    help: "Uploads being received now",
    read: () => uploads.inFlight,
  });
  if (hashPool !== null) {
    single({
      name: "storage_hash_pool_segments_in_flight",
      help: "Piece-cid segments (about 1 MiB each) sent to hashing Workers and not yet hashed",
      read: () => hashPool.segmentsInFlight,
    });
    single({
      name: "storage_hash_pool_workers",
      help: "Hashing Workers of the pool",
      read: () => hashPool.size,
    });
  }
  if (storedTotals !== null) {
    single({
      name: "storage_pieces_stored",
      help: "Pieces in the database (counted at most 5 s ago)",
      read: async () => (await storedTotals.read()).pieces,
    });
    single({
      name: "storage_stored_bytes",
      help: "Bytes of the pieces in the database, one copy each (summed at most 5 s ago)",
      read: async () => (await storedTotals.read()).bytes,
    });
  }
  if (sources.gc !== null) registerGcFamilies(registry, single, sources.gc);
  if (sources.databaseFiles.length > 0) {
    registry.collected({
      name: "storage_database_size_bytes",
      help: "Size of the database's files: the database (db) and its write-ahead log (wal)",
      type: "gauge",
      labelNames: ["file"],
      collect: () =>
        Promise.all(sources.databaseFiles.map(async ({ kind, path }) => ({
          labels: [kind],
          value: await fileSize(path),
        }))),
    });
  }
  if (diskSpace !== null) {
    single({
      name: "storage_disk_free_bytes",
      help: "Free bytes (available to the service) of the data directory's file system",
      read: async () => (await diskSpace()).freeBytes,
    });
    single({
      name: "storage_disk_size_bytes",
      help: "Size in bytes of the data directory's file system",
      read: async () => (await diskSpace()).totalBytes,
    });
  }
  registerConnectionGauges(registry, sources.connections);
  if (sources.handoff) registerHandoffGauges(registry, sources.handoff);
  registerProcessGauges(registry, single);
  registerEventLoopMetrics(registry, sources.eventLoop);
}

function registerGcFamilies(
  registry: MetricsRegistry,
  single: (family: SingleValue) => void,
  gc: GcSource,
): void {
  const byKind = (
    name: string,
    help: string,
    read: (t: ReturnType<GcSource["totals"]>) => number[],
  ) =>
    registry.collected({
      name,
      help,
      type: "counter",
      labelNames: ["kind"],
      collect: () => {
        const [piece, orphan] = read(gc.totals());
        return [{ labels: ["piece"], value: piece }, { labels: ["orphan"], value: orphan }];
      },
    });
  byKind(
    "storage_gc_removed_pieces_total",
    "Pieces whose bytes this process's sweeps removed: no deal kept them (piece), or no row named them (orphan)",
    (t) => [t.pieces, t.orphans],
  );
  byKind(
    "storage_gc_removed_bytes_total",
    "Bytes this process's sweeps removed, by kind as storage_gc_removed_pieces_total",
    (t) => [t.bytes, t.orphanBytes],
  );
  single({
    name: "storage_gc_sweeps_total",
    help: "Sweeps this process finished",
    type: "counter",
    read: () => gc.totals().sweeps,
  });
  single({
    name: "storage_gc_backlog_pieces",
    help: "Pieces past their grace period not removed yet (counted at most 60 s ago)",
    read: async () => (await gc.backlog.read()).pieces,
  });
  single({
    name: "storage_gc_backlog_bytes",
    help: "Bytes of the pieces past their grace period not removed yet (at most 60 s ago)",
    read: async () => (await gc.backlog.read()).bytes,
  });
  single({
    name: "storage_gc_last_sweep_timestamp_seconds",
    help: "When the last sweep (by any instance or main.ts gc) finished, in Unix seconds; 0: never",
    read: async () => {
      const last = await gc.lastSweep();
      return last === null ? 0 : Date.parse(last.finishedAt) / 1000;
    },
  });
}

function registerProcessGauges(
  registry: MetricsRegistry,
  single: (family: SingleValue) => void,
): void {
  single({
    name: "storage_process_resident_memory_bytes",
    help: "Resident set size of the process",
    read: () => Deno.memoryUsage().rss,
  });
  registry.collected({
    name: "storage_process_heap_bytes",
    help: "JavaScript heap of the process: used, and total (allocated)",
    type: "gauge",
    labelNames: ["kind"],
    collect: () => {
      const usage = Deno.memoryUsage();
      return [
        { labels: ["used"], value: usage.heapUsed },
        { labels: ["total"], value: usage.heapTotal },
      ];
    },
  });
  single({
    name: "storage_process_external_memory_bytes",
    help: "Memory held outside the JavaScript heap (buffers of bodies and cached pieces)",
    read: () => Deno.memoryUsage().external,
  });
  single({
    name: "storage_process_start_time_seconds",
    help: "When the process started, in Unix seconds",
    read: () => Math.round(performance.timeOrigin) / 1000,
  });
}

/** A file's size, 0 when it does not exist (the WAL between checkpoints and restarts). */
async function fileSize(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
}
