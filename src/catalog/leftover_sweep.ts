/**
 * Removes what interrupted uploads left in the piece store, while serving:
 * the server's "leftover-sweep" job (server/jobs.ts) runs it once right
 * after the start (in the background, so a store that cannot be reached then
 * does not stop the start), then every interval. With a shared database the
 * store is told which instances are alive, so the leftovers of one that died
 * (SIGKILL, a lost host) go within about a heartbeat's dead-after time plus
 * one interval, instead of after a day or at some later start; the store's
 * own leftovers (an abort that failed while the bucket was away) go on the
 * next run, and so do committed bytes whose record failed once the database
 * says no row names them (`settle`). A run that fails (the store or the
 * database away) is logged and simply tried again on the next one.
 */
import type { Logger } from "../kernel/log.ts";
import type { CleanupOptions, PieceStore } from "../driver/driver.ts";

export interface LeftoverSweepOptions {
  store: PieceStore;
  /** The instances known alive (with a shared database); null: the store judges by age. */
  liveWriters: (() => Promise<NonNullable<CleanupOptions["writers"]>>) | null;
  /** Runs first on each sweep: the catalog asks again about bytes whose record failed. */
  settle?: () => Promise<void>;
  logger: Logger;
}

export class LeftoverSweep {
  readonly #options: LeftoverSweepOptions;

  constructor(options: LeftoverSweepOptions) {
    this.#options = options;
  }

  /** One sweep; rejects (after logging why) when the store or the database failed it. */
  async sweep(): Promise<void> {
    const { store, liveWriters, logger } = this.#options;
    await this.#options.settle?.();
    try {
      const writers = liveWriters === null ? undefined : await liveWriters();
      const { removedTemporaryFiles } = await store.cleanup({ writers });
      if (removedTemporaryFiles > 0) {
        logger.info("removed leftovers of interrupted uploads", { files: removedTemporaryFiles });
      }
    } catch (error) {
      logger.warn("cannot remove leftovers of interrupted uploads now", { error: String(error) });
      throw error;
    }
  }
}
