/**
 * Tells retrieval about pieces another process marked: corrupt (`main.ts
 * scrub` runs beside the server and marks pieces in the shared database) or
 * removed (a garbage-collection sweep by `main.ts gc` or another instance).
 * Retrieval finds those marks on its database path at once, but answers from
 * the small-piece cache skip the database. So the marks are polled (the
 * server's "corrupt-watch" and "removal-watch" jobs, server/jobs.ts: at the
 * start, then every interval), only those made since the last poll (by mark
 * number: a mark cleared and made again is new), and every newly marked cid
 * is handed on; within one interval, cached answers stop too. One watch per
 * kind of mark. Marks made before the watch started need not be handed on
 * when nothing was cached then (`startAt`): removals pile up over the years,
 * corrupt marks do not.
 */
export interface PieceMarkWatchOptions {
  /** Marks made after a mark number, oldest first, a page at a time (e.g. CatalogRecords.corruptMarksAfter). */
  marksAfter(mark: number): Promise<{ mark: number; cid: string }[]>;
  onMarked(cid: string): void;
  /** The mark to start after; default 0 (every mark made so far is handed on). */
  startAt?(): Promise<number>;
  /** Told why a poll failed (it is tried again on the next). */
  onError(error: unknown): void;
}

export class PieceMarkWatch {
  readonly #options: PieceMarkWatchOptions;
  /** The last mark handed on; null until startAt answered. */
  #seen: number | null;

  constructor(options: PieceMarkWatchOptions) {
    this.#options = options;
    this.#seen = options.startAt ? null : 0;
  }

  /** One poll: hands on every mark made since the last; rejects (after onError) when it fails. */
  async poll(signal: AbortSignal): Promise<void> {
    const { marksAfter, onMarked } = this.#options;
    try {
      this.#seen ??= await this.#options.startAt!();
      while (!signal.aborted) {
        const page = await marksAfter(this.#seen);
        if (page.length === 0) return;
        for (const { mark, cid } of page) {
          onMarked(cid);
          this.#seen = mark;
        }
      }
    } catch (error) {
      this.#options.onError(error);
      throw error;
    }
  }
}
