/**
 * Garbage collection as the server (and `main.ts gc`) runs it: a sweep
 * (gc.ts) when asked, and every `--gc-interval` hours in the server (its
 * "gc" job, server/jobs.ts, asks); one at
 * a time across every process sharing the metadata (catalog/sweep_turn.ts),
 * so with N instances one of them sweeps and the others find the turn taken
 * and skip. It keeps what operators see: totals for /metrics, whether a
 * sweep runs now and the last one (from the database, whoever ran it) for
 * /healthz and the start-up summary, a log line per sweep. Built the same
 * way for both (garbageCollectorOf), from the deployment's metadata and store.
 */
import { DAY_MS, toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import type { LifecycleRecords } from "../domain/lifecycle_records.ts";
import type { Logger } from "../kernel/log.ts";
import type { PieceStore } from "../driver/driver.ts";
import { PieceRemoval } from "../catalog/piece_removal.ts";
import type { Metadata } from "../backends/metadata.ts";
import type { SweepTurn } from "../domain/locks.ts";
import type { GcHealth } from "../kernel/health_wire.ts";
import { sweepPieces } from "./gc.ts";
import type { RemovedPiece, SweepReport } from "./gc.ts";

const HOUR_MS = 3_600_000;

export interface GarbageCollectorOptions {
  store: PieceStore;
  lifecycle: LifecycleRecords;
  removal: PieceRemoval;
  sweepTurn: SweepTurn;
  clock: Clock;
  logger: Logger;
  graceDays: number;
  removalsPerSecond: number;
  /** Between two sweeps the server runs by itself, as /healthz reports it; 0: none. */
  intervalMs: number;
  /** Told of each piece removed by this process, as it is (the server stops caching it). */
  onRemoved?(cid: string): void;
}

/** What garbage collection reads of the configuration (the server's Config is one). */
export interface GcSettings {
  retentionGraceDays: number;
  gcRemovalsPerSecond: number;
}

export interface DeploymentGcOptions
  extends Pick<GarbageCollectorOptions, "store" | "clock" | "logger" | "onRemoved"> {
  metadata: Pick<Metadata, "catalog" | "lifecycle" | "cidLocks" | "sweepTurn">;
  settings: GcSettings;
  /** Between the sweeps the server runs by itself (/healthz says it); default 0, none. */
  intervalMs?: number;
}

/** The collector of a deployment and the piece removal it drives: the server's and `main.ts gc`'s. */
export function garbageCollectorOf(options: DeploymentGcOptions): GarbageCollector {
  const { metadata, store, settings } = options;
  return new GarbageCollector({
    store,
    lifecycle: metadata.lifecycle,
    removal: new PieceRemoval({
      store,
      records: metadata.catalog,
      lifecycle: metadata.lifecycle,
      cidLocks: metadata.cidLocks,
    }),
    sweepTurn: metadata.sweepTurn,
    clock: options.clock,
    logger: options.logger,
    graceDays: settings.retentionGraceDays,
    removalsPerSecond: settings.gcRemovalsPerSecond,
    intervalMs: options.intervalMs ?? 0,
    onRemoved: options.onRemoved,
  });
}

export interface SweepRequest {
  /** Judge as at this instant (Unix ms); default now. */
  asOf?: number;
  /** Instead of the configured rate (a bench's unpaced sweep). */
  removalsPerSecond?: number;
  dryRun?: boolean;
  signal?: AbortSignal;
  onRemoved?(removed: RemovedPiece): void;
}

/** What this process removed since it started (the /metrics counters). */
export interface RemovalTotals {
  pieces: number;
  bytes: number;
  orphans: number;
  orphanBytes: number;
  sweeps: number;
}

export class GarbageCollector {
  readonly #options: GarbageCollectorOptions;
  readonly #totals: RemovalTotals = { pieces: 0, bytes: 0, orphans: 0, orphanBytes: 0, sweeps: 0 };
  /** Aborted by stop(): every sweep of this process ends between two removals. */
  readonly #stopping = new AbortController();
  readonly #inFlight = new Set<Promise<unknown>>();
  #running = false;

  constructor(options: GarbageCollectorOptions) {
    this.#options = options;
  }

  get totals(): Readonly<RemovalTotals> {
    return this.#totals;
  }

  /**
   * One sweep now, unless one is running already, here or in another process
   * (then null). Logs what it did, or why it failed (and rethrows).
   */
  async sweep(request: SweepRequest = {}): Promise<SweepReport | null> {
    const { logger } = this.#options;
    this.#stopping.signal.throwIfAborted();
    const signal = request.signal
      ? AbortSignal.any([request.signal, this.#stopping.signal])
      : this.#stopping.signal;
    const running = this.#options.sweepTurn.tryRun(async (turnLost) => {
      this.#running = true;
      try {
        return await sweepPieces({
          ...this.#options,
          asOf: request.asOf,
          dryRun: request.dryRun,
          removalsPerSecond: request.removalsPerSecond ?? this.#options.removalsPerSecond,
          signal: AbortSignal.any([signal, turnLost]),
          onRemoved: this.#counting(request),
        });
      } finally {
        this.#running = false;
      }
    });
    this.#inFlight.add(running);
    const turn = await running.catch((error) => {
      if (!signal.aborted) logger.error("gc failed", { error: String(error) });
      throw error;
    }).finally(() => this.#inFlight.delete(running));
    if (!turn.ran) {
      logger.info("gc skipped: another sweep is running");
      return null;
    }
    const report = turn.value;
    if (!report.dryRun) this.#totals.sweeps++;
    logger.info(report.dryRun ? "gc dry run finished" : "gc finished", {
      asOf: report.asOf,
      pieces: report.pieces,
      removedPieces: report.removedPieces,
      removedBytes: report.removedBytes,
      removedOrphans: report.removedOrphans,
      resumed: report.resumed,
      seconds: report.seconds,
    });
    return report;
  }

  /** Pieces (and bytes) past their grace period not removed yet, counted now. */
  backlog(): Promise<{ pieces: number; bytes: number }> {
    const { lifecycle, clock, graceDays } = this.#options;
    return lifecycle.removalBacklog(toRfc3339(clock.now() - graceDays * DAY_MS));
  }

  /** For /healthz; the last sweep is null when the database cannot say (its health says why). */
  async health(): Promise<GcHealth> {
    return {
      intervalHours: this.#options.intervalMs / HOUR_MS,
      graceDays: this.#options.graceDays,
      running: this.#running,
      lastSweep: await this.#options.lifecycle.lastSweep().catch(() => null),
    };
  }

  /** Aborts any sweep in progress and refuses new ones; resolves once they ended. */
  async stop(): Promise<void> {
    this.#stopping.abort(new Error("stopping"));
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Counts what a sweep removes, and tells whoever asked (and the server's cache). */
  #counting(request: SweepRequest): (removed: RemovedPiece) => void {
    return (removed) => {
      if (!request.dryRun) {
        if (removed.orphan) {
          this.#totals.orphans++;
          this.#totals.orphanBytes += removed.size;
        } else {
          this.#totals.pieces++;
          this.#totals.bytes += removed.size;
          this.#options.onRemoved?.(removed.cid);
        }
      }
      request.onRemoved?.(removed);
    };
  }
}
