/**
 * Tells retrieval about pieces marked corrupt by another process. `main.ts
 * scrub` runs beside the server and marks pieces in the shared database;
 * retrieval finds those marks on its database path at once, but answers from
 * the small-piece cache skip the database. So the marks are polled (one query
 * of a table that is nearly always empty) and every marked cid is handed on;
 * within one interval, cached answers stop too.
 */
export interface CorruptPieceWatchOptions {
  /** Cids of every piece marked corrupt (CatalogRecords.corruptPieceCids). */
  corruptCids(): string[];
  onCorrupt(cid: string): void;
  intervalMs: number;
  onError(error: unknown): void;
}

export class CorruptPieceWatch {
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: CorruptPieceWatchOptions) {
    const poll = () => {
      try {
        for (const cid of options.corruptCids()) options.onCorrupt(cid);
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
