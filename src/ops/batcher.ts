/**
 * Items gathered into batches, one call each (a query, a write): the
 * operator's passes walk every piece there is, so one call per item would
 * cost a round trip (on SQLite, a turn of the serving thread) per piece, and
 * gathering them all would hold a catalog of millions in memory.
 */

export interface BatcherOptions<T> {
  /** How many items make a batch that is handed on at once. */
  size: number;
  /** What is done with a batch; never called with none. */
  flush(batch: T[]): Promise<void>;
}

export class Batcher<T> {
  readonly #options: BatcherOptions<T>;
  readonly #items: T[] = [];

  constructor(options: BatcherOptions<T>) {
    this.#options = options;
  }

  /** Adds an item; a batch it fills is handed on before this resolves. */
  async add(item: T): Promise<void> {
    this.#items.push(item);
    if (this.#items.length >= this.#options.size) await this.flush();
  }

  /**
   * Hands on what has been gathered (the last, short batch). The items are
   * taken before the call, so concurrent adds gather the next batch meanwhile.
   */
  async flush(): Promise<void> {
    if (this.#items.length === 0) return;
    await this.#options.flush(this.#items.splice(0));
  }
}
