/**
 * The service's metric set in one object: the registry, the counters the
 * request pipeline feeds (request_metrics.ts), and the gauges read at scrape
 * time (scrape_gauges.ts). The composition root (server/) makes one per
 * server when --metrics is on, and none otherwise, so a server without
 * metrics counts nothing at all.
 */
import { MetricsRegistry } from "./registry.ts";
import { RequestMetrics } from "./request_metrics.ts";
import { registerScrapeGauges } from "./scrape_gauges.ts";
import type { ScrapeSources } from "./scrape_gauges.ts";

export interface ServiceMetricsOptions extends ScrapeSources {
  /** The route the pipeline's fast path answers (retrieval). */
  fastPathRoute: string;
  /** The route whose POSTs are uploads. */
  uploadRoute: string;
}

export interface ServiceMetrics {
  /** What the request pipeline counts answers with. */
  readonly requests: RequestMetrics;
  /** The exposition GET /metrics answers. */
  render(): Promise<string>;
}

export function createServiceMetrics(options: ServiceMetricsOptions): ServiceMetrics {
  const registry = new MetricsRegistry();
  const requests = new RequestMetrics({
    registry,
    fastPathRoute: options.fastPathRoute,
    uploadRoute: options.uploadRoute,
  });
  registerScrapeGauges(registry, options);
  return { requests, render: () => registry.render() };
}
