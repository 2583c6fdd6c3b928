/**
 * How many pieces the database holds and their bytes, for the metrics gauges.
 * A COUNT and a SUM over the pieces table is a scan, cheap at the sizes a
 * staging service sees but not free: it runs at scrape time only, and its
 * answer is kept for a few seconds, so several scrapers (or a HEAD and a GET)
 * cost one scan (CatalogRecords.storedTotals).
 */

export interface StoredTotalsValue {
  pieces: number;
  bytes: number;
}

export interface StoredTotalsOptions {
  /** Counts them now (CatalogRecords.storedTotals in the service). */
  count(): Promise<StoredTotalsValue>;
  /** How long one answer is reused (default 5 s). */
  ttlMs?: number;
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
}

const DEFAULT_TTL_MS = 5_000;

export class StoredTotals {
  readonly #count: () => Promise<StoredTotalsValue>;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #cached: { value: StoredTotalsValue; at: number } | null = null;

  constructor(options: StoredTotalsOptions) {
    this.#count = options.count;
    this.#ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The totals, counted now or at most ttlMs ago. Throws what the database throws. */
  async read(): Promise<StoredTotalsValue> {
    const now = this.#now();
    if (this.#cached !== null && now - this.#cached.at < this.#ttlMs) return this.#cached.value;
    const value = await this.#count();
    this.#cached = { value, at: now };
    return value;
  }
}
