/**
 * What GET /metrics reads, built once by the composition root (services.ts):
 * the counters the request pipeline pushes into, and the gauges read from
 * the services when Prometheus scrapes (metrics/scrape_gauges.ts).
 */
import type { Config } from "../config/mod.ts";
import type { Metadata } from "../backends/metadata.ts";
import { RETRIEVAL_PATH } from "../http/retrieval/mod.ts";
import { UPLOAD_PATH } from "../http/routes.ts";
import type { UploadDrain } from "../http/pipeline/upload_drain.ts";
import { diskSpaceReader } from "../metrics/disk_space.ts";
import { createServiceMetrics } from "../metrics/service_metrics.ts";
import type { ServiceMetrics } from "../metrics/service_metrics.ts";
import { StoredTotals } from "../metrics/stored_totals.ts";
import type { ConnectionStatsSource } from "../metrics/connection_gauges.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { PieceDigests } from "../catalog/digests.ts";
import type { GarbageCollector } from "../ops/gc_service.ts";
import type { Handoff } from "../handoff/service.ts";
import type { EventLoopDelay } from "../kernel/event_loop_delay.ts";
import { gcMetricsSource } from "./garbage_collection.ts";

/** What GET /metrics reads: counters, plus gauges read from the services when it is scraped. */
export function buildServiceMetrics(
  deps: {
    config: Config;
    metadata: Metadata;
    digests: PieceDigests;
    hashPool: HashWorkerPool | null;
    uploadDrain: UploadDrain;
    dbPath: string | null;
    connections: ConnectionStatsSource;
    gc: GarbageCollector;
    handoff: Handoff | null;
    eventLoop: EventLoopDelay;
  },
): ServiceMetrics {
  const { config, metadata, dbPath } = deps;
  return createServiceMetrics({
    fastPathRoute: RETRIEVAL_PATH,
    uploadRoute: UPLOAD_PATH,
    digests: deps.digests,
    hashPool: deps.hashPool,
    uploads: deps.uploadDrain,
    storedTotals: metadata.persistent
      ? new StoredTotals({ count: () => metadata.catalog.storedTotals() })
      : null,
    databaseFiles: dbPath === null ? [] : [
      { kind: "db", path: dbPath },
      { kind: "wal", path: `${dbPath}-wal` },
    ],
    diskSpace: metadata.persistent && config.dataDir !== null && config.store === "disk"
      ? diskSpaceReader(config.dataDir)
      : null,
    connections: deps.connections,
    gc: gcMetricsSource(deps.gc, metadata),
    handoff: deps.handoff,
    eventLoop: deps.eventLoop,
  });
}
