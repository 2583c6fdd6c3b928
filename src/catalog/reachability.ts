/**
 * A cheap, always-current answer to "is the piece store still there?".
 * Retrievals answered from memory (the small-piece cache) never touch the
 * store, so without this a server whose disk vanished would keep serving
 * cached pieces as if nothing happened; with it they answer 503 within one
 * probe interval, like every other retrieval. The server probes every
 * interval (its "store-probe" job, server/jobs.ts).
 */
import type { PieceStore } from "../driver/driver.ts";

export class StoreReachability {
  readonly #store: PieceStore;
  #reachable = true;

  constructor(options: { store: PieceStore }) {
    this.#store = options.store;
  }

  /** False from the first failed probe until the next successful one. */
  get reachable(): boolean {
    return this.#reachable;
  }

  /** One probe (a stat of a key that never exists); rejects, saying why, when it fails. */
  async probe(): Promise<void> {
    try {
      await this.#store.stat("reachabilityprobe");
      this.#reachable = true;
    } catch (error) {
      this.#reachable = false;
      throw error;
    }
  }
}
