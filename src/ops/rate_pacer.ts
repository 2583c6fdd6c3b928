/**
 * Holds a worker to at most N units per second, so that the operator's work
 * leaves the store to the uploads and retrievals it runs beside: a scrub's
 * bytes read (`--scrub-rate`), a sweep's pieces removed (`--gc-rate`). The
 * worker reports each unit of work after doing it; the pacer keeps the
 * instant by which everything done so far is "paid for" and sleeps once the
 * worker is more than a short burst ahead of it. The instant is absolute, so
 * a timer firing late is made up for, never added up.
 */
import { sleep } from "../kernel/clock.ts";

/** How far ahead of its rate a reader may run before it waits: few timers, small bursts. */
const BURST_MS = 50;

export interface RatePacerOptions {
  /** Bytes for a scrub, pieces for a sweep. */
  perSecond: number;
  /** Milliseconds on a monotonic clock (tests pass a fake). */
  now?: () => number;
  /** Waits ms, or rejects with the signal's reason when it aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export class RatePacer {
  readonly #msPerUnit: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  #paidUntil = -Infinity;

  constructor(options: RatePacerOptions) {
    this.#msPerUnit = 1000 / options.perSecond;
    this.#now = options.now ?? (() => performance.now());
    this.#sleep = options.sleep ?? sleep;
  }

  /** Accounts for `units` just done; resolves when going on keeps to the rate. */
  async take(units: number, signal?: AbortSignal): Promise<void> {
    const now = this.#now();
    this.#paidUntil = Math.max(this.#paidUntil, now) + units * this.#msPerUnit;
    const ahead = this.#paidUntil - now;
    if (ahead > BURST_MS) await this.#sleep(ahead - BURST_MS, signal);
  }
}
