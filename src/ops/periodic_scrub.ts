/**
 * The server's own scrub (`--scrub-interval`, off by default): one pass over
 * every piece (ops/scrub.ts), then a pause of the interval, then the
 * next; a pass never overlaps the one before. What a pass finds is logged:
 * a line per failing piece as it is found (an error, for alerting) and a
 * summary at the end. Stopping aborts a pass in progress between two reads.
 */
import type { Logger } from "../log.ts";
import type { ScrubFailure, ScrubReport } from "./scrub.ts";

/** setTimeout's longest delay (about 24.8 days); longer intervals wait in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface PeriodicScrubOptions {
  intervalMs: number;
  /** One pass, telling onFailure what fails as it is found; it rejects soon after an abort. */
  scrub(signal: AbortSignal, onFailure: (failure: ScrubFailure) => void): Promise<ScrubReport>;
  logger: Logger;
}

export class PeriodicScrub {
  readonly #options: PeriodicScrubOptions;
  readonly #stop = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pass: Promise<void> | null = null;

  constructor(options: PeriodicScrubOptions) {
    this.#options = options;
    this.#waitUntil(Date.now() + options.intervalMs);
  }

  /** Stops scheduling, aborts a pass in progress and waits for it to end. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("server stopping"));
    clearTimeout(this.#timer);
    await this.#pass;
  }

  #waitUntil(dueAt: number): void {
    const delay = Math.min(Math.max(0, dueAt - Date.now()), MAX_TIMER_MS);
    this.#timer = setTimeout(() => {
      if (Date.now() < dueAt) this.#waitUntil(dueAt);
      else this.#pass = this.#runPass();
    }, delay);
    Deno.unrefTimer(this.#timer);
  }

  async #runPass(): Promise<void> {
    const { logger, intervalMs } = this.#options;
    try {
      const report = await this.#options.scrub(this.#stop.signal, (failure) => {
        logger.error("scrub: stored piece failed verification", { ...failure });
      });
      logger.info("scrub finished", {
        pieces: report.pieces,
        bytes: report.bytes,
        seconds: report.seconds,
        corrupt: report.corrupt.length,
        missing: report.missing.length,
        cleared: report.cleared.length,
        orphans: report.orphans.length,
      });
    } catch (error) {
      if (this.#stop.signal.aborted) return;
      logger.error("scrub failed", { error: String(error) });
    } finally {
      this.#pass = null;
    }
    if (!this.#stop.signal.aborted) this.#waitUntil(Date.now() + intervalMs);
  }
}
