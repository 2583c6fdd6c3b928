/**
 * How long this process's event loop is held, measured from inside (as
 * Node's monitorEventLoopDelay does): a timer due every `resolutionMs`
 * records the time since its previous tick. With the loop free that is the
 * resolution (10 ms); a synchronous stretch of N ms (a long transaction, a
 * big parse) shows as at least N, since no tick can run inside it. So a
 * figure is an upper bound on what any request waited in that gap, and
 * never more than one resolution above it. A client's probe (asking
 * /healthz in a loop) adds its own scheduling and the network to the same
 * figure; on a shared machine that alone reached 90-560 ms.
 *
 * A tick allocates nothing of its own: one callback made once, numbers kept
 * in fields, and an optional sink (the /metrics histogram) given a number.
 */

/** How often the timer is due by default. */
export const EVENT_LOOP_RESOLUTION_MS = 10;
/** /healthz's figure covers the last WINDOW_MS at least and twice that at most. */
const WINDOW_MS = 30_000;

export interface EventLoopDelayOptions {
  /** How often the timer is due; default EVENT_LOOP_RESOLUTION_MS. */
  resolutionMs?: number;
}

export class EventLoopDelay {
  readonly #resolutionMs: number;
  #timer: ReturnType<typeof setInterval> | null = null;
  #lastTick = 0;
  /** Longest gap since the last takeMax() (a scrape). */
  #maxSinceTake = 0;
  /** Longest gap in the window under way and in the one before it. */
  #windowMax = 0;
  #previousWindowMax = 0;
  #windowStart = 0;
  #sink: ((seconds: number) => void) | null = null;
  readonly #tick = () => this.#onTick();

  constructor(options: EventLoopDelayOptions = {}) {
    this.#resolutionMs = options.resolutionMs ?? EVENT_LOOP_RESOLUTION_MS;
  }

  /** Starts the timer; it does not keep the process alive. */
  start(): void {
    if (this.#timer !== null) return;
    this.#lastTick = this.#windowStart = performance.now();
    const timer = setInterval(this.#tick, this.#resolutionMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Every gap from now on, in seconds, is handed to `sink` too (a histogram's observe). */
  observeWith(sink: (seconds: number) => void): void {
    this.#sink = sink;
  }

  /** The longest gap (ms) since the previous call, or since start; starts the next stretch at 0. */
  takeMax(): number {
    const max = Math.max(this.#maxSinceTake, this.#sinceLastTick());
    this.#maxSinceTake = 0;
    return max;
  }

  /** The longest gap (ms) of the last WINDOW_MS to 2 × WINDOW_MS, a stall under way included. */
  recentMax(): number {
    this.#roll(performance.now());
    return Math.max(this.#windowMax, this.#previousWindowMax, this.#sinceLastTick());
  }

  /**
   * A stall under way counts too, once it is longer than a tick could explain
   * (an answer built inside a stall comes after it, so this matters for takeMax
   * called by a timer of its own, less for a request).
   */
  #sinceLastTick(): number {
    if (this.#timer === null) return 0;
    const gap = performance.now() - this.#lastTick;
    return gap > this.#resolutionMs ? gap : 0;
  }

  #onTick(): void {
    const now = performance.now();
    const gap = now - this.#lastTick;
    this.#lastTick = now;
    if (gap > this.#maxSinceTake) this.#maxSinceTake = gap;
    this.#roll(now);
    if (gap > this.#windowMax) this.#windowMax = gap;
    if (this.#sink !== null) this.#sink(gap / 1000);
  }

  #roll(now: number): void {
    if (now - this.#windowStart < WINDOW_MS) return;
    // A whole window with no tick (a stall longer than it) leaves nothing from before.
    this.#previousWindowMax = now - this.#windowStart < 2 * WINDOW_MS ? this.#windowMax : 0;
    this.#windowMax = 0;
    this.#windowStart = now;
  }
}
