/**
 * The operator's work the server runs by itself, every so often: one pass,
 * then a pause of the interval, then the next; a pass never overlaps the one
 * before (a background scrub, periodic_scrub.ts; a garbage-collection sweep,
 * gc_service.ts). Stopping aborts a pass in progress and waits for it.
 */

/** setTimeout's longest delay (about 24.8 days); longer intervals wait in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface PeriodicPassOptions {
  intervalMs: number;
  /** One pass; it rejects soon after the signal aborts. Its failures are its own to report. */
  pass(signal: AbortSignal): Promise<void>;
}

export class PeriodicPass {
  readonly #options: PeriodicPassOptions;
  readonly #stop = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pass: Promise<void> | null = null;

  constructor(options: PeriodicPassOptions) {
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
    try {
      await this.#options.pass(this.#stop.signal).catch(() => {});
    } finally {
      this.#pass = null;
    }
    if (!this.#stop.signal.aborted) this.#waitUntil(Date.now() + this.#options.intervalMs);
  }
}
