/**
 * Tells retrieval about pieces marked corrupt by another process. `main.ts
 * scrub` runs beside the server and marks pieces in the shared database;
 * retrieval finds those marks on its database path at once, but answers from
 * the small-piece cache skip the database. So the marks are polled, only
 * those made since the last poll (by row id: a mark cleared and made again is
 * new), and every newly marked cid is handed on; within one interval, cached
 * answers stop too.
 */
export interface CorruptPieceWatchOptions {
  /** Marks made after a row id, oldest first, a page at a time (CatalogRecords.corruptMarksAfter). */
  marksAfter(mark: number): { mark: number; cid: string }[];
  onCorrupt(cid: string): void;
  intervalMs: number;
  onError(error: unknown): void;
}

export class CorruptPieceWatch {
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: CorruptPieceWatchOptions) {
    let seen = 0;
    const poll = () => {
      try {
        for (let page; (page = options.marksAfter(seen)).length > 0;) {
          for (const { mark, cid } of page) {
            options.onCorrupt(cid);
            seen = mark;
          }
        }
      } catch (error) {
        options.onError(error);
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
