/**
 * Holds a reader to at most N bytes per second, so that a scrub re-reading
 * every piece leaves the disk to the uploads and retrievals it runs beside
 * (`--scrub-rate`). The reader reports each chunk after reading it; the pacer
 * keeps the instant by which everything read so far is "paid for" and sleeps
 * once the reader is more than a short burst ahead of it. The instant is
 * absolute, so a timer firing late is made up for, never added up.
 */
import { sleep } from "../clock.ts";

/** How far ahead of its rate a reader may run before it waits: few timers, small bursts. */
const BURST_MS = 50;

export interface RatePacerOptions {
  bytesPerSecond: number;
  /** Milliseconds on a monotonic clock (tests pass a fake). */
  now?: () => number;
  /** Waits ms, or rejects with the signal's reason when it aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export class RatePacer {
  readonly #msPerByte: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  #paidUntil = -Infinity;

  constructor(options: RatePacerOptions) {
    this.#msPerByte = 1000 / options.bytesPerSecond;
    this.#now = options.now ?? (() => performance.now());
    this.#sleep = options.sleep ?? sleep;
  }

  /** Accounts for `bytes` just read; resolves when reading on keeps to the rate. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    const now = this.#now();
    this.#paidUntil = Math.max(this.#paidUntil, now) + bytes * this.#msPerByte;
    const ahead = this.#paidUntil - now;
    if (ahead > BURST_MS) await this.#sleep(ahead - BURST_MS, signal);
  }
}
