/**
 * Notices a body that stops sending, or sends too slowly: fires once if a
 * read has been waiting for idleMs, or if the body's average rate falls below
 * a minimum once its grace time is over (uploads, JSON bodies, bodies hashed
 * for their piece cid). The idle timeout alone lets one byte every few
 * seconds hold an upload, and all it reserved, open for days; the minimum
 * rate bounds that to about grace + length / rate.
 *
 * The rate counts only time spent waiting for the client (reads in flight),
 * not time the server spends writing what arrived: a slow disk is not the
 * client's fault. One timer per body, re-armed lazily, instead of a timer and
 * a race per chunk (an upload has thousands of chunks).
 */

/** A body's minimum average rate, enforced once `graceMs` of waiting is over. */
export interface MinBodyRate {
  bytesPerSecond: number;
  graceMs: number;
}

export interface ReadWatchdogOptions {
  idleMs: number;
  /** null: no minimum rate, only the idle timeout. */
  minRate?: MinBodyRate | null;
}

export type WatchdogVerdict = "idle" | "slow";

export class ReadWatchdog {
  #fired: WatchdogVerdict | null = null;
  readonly #idleMs: number;
  readonly #minRate: MinBodyRate | null;
  #readingSince: number | null = null;
  /** Time spent in reads that have finished. */
  #waitedMs = 0;
  #receivedBytes = 0;
  #timer: ReturnType<typeof setTimeout>;
  readonly #onFire: (verdict: WatchdogVerdict) => void;

  /** onFire runs once, when a read has waited idleMs or the body is too slow; it should end the read. */
  constructor(options: ReadWatchdogOptions, onFire: (verdict: WatchdogVerdict) => void) {
    this.#idleMs = options.idleMs;
    this.#minRate = options.minRate && options.minRate.bytesPerSecond > 0 ? options.minRate : null;
    this.#onFire = onFire;
    this.#timer = setTimeout(() => this.#check(), Math.min(this.#idleMs, this.#allowedWaitMs()));
  }

  #check(): void {
    const now = performance.now();
    const reading = this.#readingSince;
    const waited = this.#waitedMs + (reading === null ? 0 : now - reading);
    const allowed = this.#allowedWaitMs();
    if (waited >= allowed) return this.#fire("slow");
    if (reading !== null && now - reading >= this.#idleMs) return this.#fire("idle");
    const untilIdle = reading === null ? this.#idleMs : reading + this.#idleMs - now;
    // Waiting time grows at most as fast as the clock: no sooner can it pass what is allowed.
    const untilSlow = allowed - waited;
    this.#timer = setTimeout(() => this.#check(), Math.max(1, Math.min(untilIdle, untilSlow)));
  }

  /** How long the body may have made us wait, for what it has sent so far. */
  #allowedWaitMs(): number {
    if (this.#minRate === null) return Infinity;
    const { bytesPerSecond, graceMs } = this.#minRate;
    return Math.max(graceMs, (this.#receivedBytes * 1000) / bytesPerSecond);
  }

  #fire(verdict: WatchdogVerdict): void {
    this.#fired = verdict;
    this.#onFire(verdict);
  }

  /** Why it fired: "idle", "slow", or null while it has not. */
  get fired(): WatchdogVerdict | null {
    return this.#fired;
  }

  /** Marks the start (true) or end (false) of a read. */
  reading(active: boolean): void {
    const now = performance.now();
    if (!active && this.#readingSince !== null) this.#waitedMs += now - this.#readingSince;
    this.#readingSince = active ? now : null;
  }

  /** Counts bytes that arrived (for the minimum rate). */
  received(bytes: number): void {
    this.#receivedBytes += bytes;
  }

  get idleMs(): number {
    return this.#idleMs;
  }

  get minRate(): MinBodyRate | null {
    return this.#minRate;
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}

/** Why a body was abandoned, for the 408's message. */
export function describeVerdict(watchdog: ReadWatchdog): string {
  if (watchdog.fired === "slow" && watchdog.minRate !== null) {
    const { bytesPerSecond, graceMs } = watchdog.minRate;
    return `it arrived slower than ${bytesPerSecond} bytes/s on average ` +
      `(after the first ${graceMs / 1000} s)`;
  }
  return `no bytes arrived for ${watchdog.idleMs / 1000} s`;
}
