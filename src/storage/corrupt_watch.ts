/**
 * Tells retrieval about pieces marked corrupt by another process. `main.ts
 * scrub` runs beside the server and marks pieces in the shared database;
 * retrieval finds those marks on its database path at once, but answers from
 * the small-piece cache skip the database. So the marks are polled, only
 * those made since the last poll (by mark number: a mark cleared and made again is
 * new), and every newly marked cid is handed on; within one interval, cached
 * answers stop too.
 */
export interface CorruptPieceWatchOptions {
  /** Marks made after a mark number, oldest first, a page at a time (CatalogRecords.corruptMarksAfter). */
  marksAfter(mark: number): Promise<{ mark: number; cid: string }[]>;
  onCorrupt(cid: string): void;
  intervalMs: number;
  onError(error: unknown): void;
}

export class CorruptPieceWatch {
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: CorruptPieceWatchOptions) {
    let seen = 0;
    let polling = false;
    const poll = async () => {
      // A slow database must not stack polls up.
      if (polling) return;
      polling = true;
      try {
        for (let page; (page = await options.marksAfter(seen)).length > 0;) {
          for (const { mark, cid } of page) {
            options.onCorrupt(cid);
            seen = mark;
          }
        }
      } catch (error) {
        options.onError(error);
      } finally {
        polling = false;
      }
    };
    poll();
    this.#timer = setInterval(poll, options.intervalMs);
    Deno.unrefTimer(this.#timer);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
