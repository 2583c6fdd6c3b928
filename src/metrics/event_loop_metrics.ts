/**
 * The event loop's stalls for GET /metrics (kernel/event_loop_delay.ts
 * measures them): every gap between two ticks of its 10 ms timer in a
 * histogram, which any number of scrapers can read, and the longest gap
 * since the previous scrape as a gauge, so a scrape says the worst of the
 * stretch it closes (a bench scrapes before and after a phase). With two
 * scrapers, each sees the longest since either scraped: the histogram's
 * buckets are then the figure to read.
 */
import type { EventLoopDelay } from "../kernel/event_loop_delay.ts";
import type { MetricsRegistry } from "./registry.ts";

/** From the free loop's 10 ms to a 30 s stall. */
const BUCKETS_SECONDS = [0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function registerEventLoopMetrics(registry: MetricsRegistry, delay: EventLoopDelay): void {
  const series = registry.histogram({
    name: "storage_event_loop_delay_seconds",
    help: "Time between two ticks of a timer due every 10 ms: 0.01 with the event loop free; " +
      "a synchronous stretch of N s shows as at least N",
    buckets: BUCKETS_SECONDS,
  }).series();
  delay.observeWith((seconds) => series.observe(seconds));
  registry.collected({
    name: "storage_event_loop_delay_max_seconds",
    help: "The longest time between two ticks of the 10 ms timer since the previous scrape",
    type: "gauge",
    collect: () => [{ value: delay.takeMax() / 1000 }],
  });
}
