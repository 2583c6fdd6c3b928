/**
 * One request at a time per resumable upload, in this process. A request that
 * arrives while another holds the upload stops it: the holder's body read is
 * aborted (it keeps what arrived, as a cut body), it records that, and lets
 * go; the newcomer then sees the settled offset. This is what a client
 * resuming after a dropped connection needs: its old PATCH may still be
 * draining buffered bytes on the server when its HEAD arrives, and a HEAD that
 * answered the moving offset would send it into a round of 409s. (tusd calls
 * this "upload locks" and does the same.)
 *
 * Across instances nothing is locked: each append records itself only if the
 * offset it started from is still the recorded one (records.advance), so of
 * two racing writers one wins and the other answers 409.
 */
import { settlesWithin } from "../kernel/clock.ts";

export interface UploadLock {
  /** Aborted when a later request for the same upload wants it. */
  readonly signal: AbortSignal;
  /** Lets the next request in. Idempotent. */
  release(): void;
}

interface Holder {
  stop: AbortController;
  released: Promise<void>;
}

export class UploadLocks {
  readonly #held = new Map<string, Holder>();

  /** The upload's lock if nobody holds it; null otherwise (the holder is left alone). */
  async tryAcquire(id: string): Promise<UploadLock | null> {
    return this.#held.has(id) ? null : await this.acquire(id, 0);
  }

  /**
   * The upload's lock, once the current holder (asked to stop) has let go; null
   * if it has not within waitMs (it is finishing a long commit, say).
   */
  async acquire(id: string, waitMs: number): Promise<UploadLock | null> {
    const deadline = Date.now() + waitMs;
    for (let holder = this.#held.get(id); holder; holder = this.#held.get(id)) {
      holder.stop.abort(new Error("a newer request for this upload arrived"));
      const left = deadline - Date.now();
      if (left <= 0 || !await settlesWithin(holder.released, left)) return null;
    }
    const stop = new AbortController();
    const { promise, resolve } = Promise.withResolvers<void>();
    const holder: Holder = { stop, released: promise };
    this.#held.set(id, holder);
    return {
      signal: stop.signal,
      release: () => {
        if (this.#held.get(id) === holder) this.#held.delete(id);
        resolve();
      },
    };
  }
}
