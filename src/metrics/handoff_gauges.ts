/**
 * The hand-off's families (only with --handoff pdp; src/handoff/): pieces and
 * bytes by hand-off state and the oldest queued piece's age, read from the
 * records at scrape time; requests to the provider by route and outcome, and
 * the time they took, kept by the provider's client.
 */
import type { MetricsRegistry } from "./registry.ts";

/** What the hand-off tells the metrics (handoff/service.ts). */
export interface HandoffSource {
  counts(): Promise<{
    byState: { state: string; pieces: number; bytes: number }[];
    oldestQueuedAt: number | null;
  }>;
  /** "<route> <outcome>" → requests; route → seconds spent (sum) and requests (count). */
  requests: {
    count: ReadonlyMap<string, number>;
    seconds: ReadonlyMap<string, { sum: number; count: number }>;
  };
}

/** Pieces counted at most this long ago: a scrape reads the records once per window. */
const COUNTS_TTL_MS = 5000;

export function registerHandoffGauges(
  registry: MetricsRegistry,
  source: HandoffSource,
  now: () => number = Date.now,
): void {
  let cached: { at: number; value: ReturnType<HandoffSource["counts"]> } | null = null;
  const counts = () => {
    if (cached === null || now() - cached.at > COUNTS_TTL_MS) {
      cached = { at: now(), value: source.counts() };
      cached.value.catch(() => cached = null);
    }
    return cached.value;
  };
  registry.collected({
    name: "storage_handoff_pieces",
    help:
      "Pieces by hand-off state (queued, pulling, adding, live, failed, ineligible, removing, removed)",
    type: "gauge",
    labelNames: ["state"],
    collect: async () =>
      (await counts()).byState.map((c) => ({ labels: [c.state], value: c.pieces })),
  });
  registry.collected({
    name: "storage_handoff_bytes",
    help: "Bytes of the pieces by hand-off state",
    type: "gauge",
    labelNames: ["state"],
    collect: async () =>
      (await counts()).byState.map((c) => ({ labels: [c.state], value: c.bytes })),
  });
  registry.collected({
    name: "storage_handoff_oldest_queued_seconds",
    help: "Age of the oldest piece waiting to be handed off; 0 when none waits",
    type: "gauge",
    collect: async () => {
      const oldest = (await counts()).oldestQueuedAt;
      return [{ value: oldest === null ? 0 : Math.max(0, (now() - oldest) / 1000) }];
    },
  });
  registry.collected({
    name: "storage_handoff_requests_total",
    help: "Requests to the storage provider, by route and outcome (ok, refused: a 4xx, " +
      "unavailable: a 429, a 5xx, a timeout or no answer)",
    type: "counter",
    labelNames: ["route", "outcome"],
    collect: () =>
      [...source.requests.count].map(([key, value]) => ({ labels: key.split(" "), value })),
  });
  registry.collected({
    name: "storage_handoff_request_seconds_total",
    help: "Seconds spent on requests to the storage provider, by route",
    type: "counter",
    labelNames: ["route"],
    collect: () =>
      [...source.requests.seconds].map(([route, time]) => ({ labels: [route], value: time.sum })),
  });
}
