/**
 * A cheap, always-current answer to "is the piece store still there?".
 * Retrievals answered from memory (the small-piece cache) never touch the
 * store, so without this a server whose disk vanished would keep serving
 * cached pieces as if nothing happened; with it they answer 503 within one
 * probe interval, like every other retrieval.
 */
import type { PieceStore } from "../driver/driver.ts";

export interface StoreReachabilityOptions {
  store: PieceStore;
  /** How often the store is probed (a stat of a key that never exists). */
  intervalMs: number;
}

export class StoreReachability {
  #reachable = true;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: StoreReachabilityOptions) {
    const probe = () =>
      options.store.stat("reachabilityprobe").then(
        () => this.#reachable = true,
        () => this.#reachable = false,
      );
    this.#timer = setInterval(probe, options.intervalMs);
    Deno.unrefTimer(this.#timer);
  }

  /** False from the first failed probe until the next successful one. */
  get reachable(): boolean {
    return this.#reachable;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
