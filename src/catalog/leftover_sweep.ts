/**
 * Removes what interrupted uploads left in the piece store, while serving:
 * once right after the start (in the background, so a store that cannot be
 * reached then does not stop the start), then every `intervalMs`. With a
 * shared database the store is told which instances are alive, so the
 * leftovers of one that died (SIGKILL, a lost host) go within about a
 * heartbeat's dead-after time plus one interval, instead of after a day or
 * at some later start; the store's own leftovers (an abort that failed while
 * the bucket was away) go on the next run, and so do committed bytes whose
 * record failed once the database says no row names them (`settle`). A run
 * that fails (the store or the database away) is logged and simply tried
 * again on the next one.
 */
import type { Logger } from "../kernel/log.ts";
import type { CleanupOptions, PieceStore } from "../driver/driver.ts";

export interface LeftoverSweepOptions {
  store: PieceStore;
  /** The instances known alive (with a shared database); null: the store judges by age. */
  liveWriters: (() => Promise<NonNullable<CleanupOptions["writers"]>>) | null;
  /** Runs first on each sweep: the catalog asks again about bytes whose record failed. */
  settle?: () => Promise<void>;
  intervalMs: number;
  logger: Logger;
}

export class LeftoverSweep {
  readonly #options: LeftoverSweepOptions;
  readonly #timer: ReturnType<typeof setInterval>;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(options: LeftoverSweepOptions) {
    this.#options = options;
    this.#timer = setInterval(() => void this.run(), options.intervalMs);
    Deno.unrefTimer(this.#timer);
    void this.run();
  }

  /** One sweep now (or the one under way); never rejects. */
  run(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return this.#running ??= this.#sweep().finally(() => this.#running = null);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  async #sweep(): Promise<void> {
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
    }
  }
}
