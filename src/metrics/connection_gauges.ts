/**
 * What the accept loop (net/accept_loop.ts) has done, for GET /metrics:
 * connections open now, and since start how many were accepted, refused at a
 * cap, evicted to make room, closed at a deadline, and how often accept()
 * failed. The listener is bound after the metrics are made, so its counts are
 * read through a source it is attached to later; unbounded (Deno.serve), the
 * families stay empty.
 */
import type { ConnectionStats } from "../net/accept_loop.ts";
import type { MetricsRegistry } from "./registry.ts";

/** Where the counts come from, once the listener is bound. */
export class ConnectionStatsSource {
  #read: () => Readonly<ConnectionStats> | null = () => null;

  /** Attaches the bound listener's counts. */
  attach(read: () => Readonly<ConnectionStats> | null): void {
    this.#read = read;
  }

  stats(): Readonly<ConnectionStats> | null {
    return this.#read();
  }
}

/** Closing and refusing outcomes, by the label they are counted under. */
const OUTCOMES: readonly [string, keyof ConnectionStats][] = [
  ["accepted", "accepted"],
  ["refused", "refused"],
  ["evicted", "evicted"],
  ["header_timeout", "headerTimeouts"],
  ["keep_alive_timeout", "keepAliveTimeouts"],
  ["slow_reader", "slowReaders"],
];

export function registerConnectionGauges(
  registry: MetricsRegistry,
  source: ConnectionStatsSource,
): void {
  // One unlabelled sample of a count; none while no listener is attached (unbounded).
  const sampleOf = (key: "open" | "acceptErrors") => () => {
    const stats = source.stats();
    return stats === null ? [] : [{ value: stats[key] }];
  };
  registry.collected({
    name: "storage_connections_open",
    help: "Connections open now (the accept loop's; absent under --connection-bounds false)",
    type: "gauge",
    collect: sampleOf("open"),
  });
  registry.collected({
    name: "storage_connections_total",
    help: "Connections since start by outcome: accepted; refused at a cap; evicted to make " +
      "room; closed at the header or keep-alive deadline",
    type: "counter",
    labelNames: ["outcome"],
    collect: () => {
      const stats = source.stats();
      if (stats === null) return [];
      return OUTCOMES.map(([label, key]) => ({ labels: [label], value: stats[key] }));
    },
  });
  registry.collected({
    name: "storage_accept_errors_total",
    help: "Times accept() failed since start (out of file descriptors, most often)",
    type: "counter",
    collect: sampleOf("acceptErrors"),
  });
}
