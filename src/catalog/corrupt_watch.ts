/**
 * Tells retrieval about pieces another process marked: corrupt (`main.ts
 * scrub` runs beside the server and marks pieces in the shared database) or
 * removed (a garbage-collection sweep by `main.ts gc` or another instance).
 * Retrieval finds those marks on its database path at once, but answers from
 * the small-piece cache skip the database. So the marks are polled, only
 * those made since the last poll (by mark number: a mark cleared and made
 * again is new), and every newly marked cid is handed on; within one
 * interval, cached answers stop too. One watch per kind of mark. Marks
 * made before the watch started need not be handed on when nothing was
 * cached then (`startAt`): removals pile up over the years, corrupt marks do
 * not.
 */
export interface PieceMarkWatchOptions {
  /** Marks made after a mark number, oldest first, a page at a time (e.g. CatalogRecords.corruptMarksAfter). */
  marksAfter(mark: number): Promise<{ mark: number; cid: string }[]>;
  onMarked(cid: string): void;
  /** The mark to start after; default 0 (every mark made so far is handed on). */
  startAt?(): Promise<number>;
  intervalMs: number;
  onError(error: unknown): void;
}

export class PieceMarkWatch {
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: PieceMarkWatchOptions) {
    let seen: number | null = options.startAt ? null : 0;
    let polling = false;
    const poll = async () => {
      // A slow database must not stack polls up.
      if (polling) return;
      polling = true;
      try {
        seen ??= await options.startAt!();
        for (let page; (page = await options.marksAfter(seen)).length > 0;) {
          for (const { mark, cid } of page) {
            options.onMarked(cid);
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
