/**
 * Small pieces kept in memory with their 200 answer built once.
 * Pieces never change, so an entry is never stale; the cache is bounded by
 * total bytes and evicts with "second chance" (CLOCK): a hit only sets a flag,
 * so the hot path never reorders the Map, and eviction skips (and clears)
 * entries used since it last passed. Serving a 1 KiB piece from here skips
 * the database lookup, open, stat and stream setup of the disk path.
 */
export class CachedPiece {
  /** The piece's size: what the entry costs the cache. */
  readonly byteLength: number;
  /** Every header of a 200 answer, in order (CORS included). */
  readonly headers: readonly [string, string][];
  /**
   * Built once and never sent itself. `new Response(bytes, { headers })` validates
   * and normalises every header on every request; `clone()` copies the already
   * checked header list and shares the bytes, which doubled small-piece req/s.
   * It is also the one copy of the bytes the entry keeps: a Response takes its
   * own copy of a Uint8Array body, so keeping the array too held every cached
   * piece twice (a 64 MiB cache took 128 MiB, and the process's RSS about 300
   * MiB more than with no cache, once the heap had churned through its copies).
   */
  readonly #template: Response;
  /** Set on every hit, cleared when eviction passes over the entry. */
  recentlyUsed = false;

  constructor(bytes: Uint8Array<ArrayBuffer>, headers: readonly [string, string][]) {
    this.byteLength = bytes.byteLength;
    this.headers = headers;
    // Content-Length is left to the HTTP layer, which sets it from the bytes anyway.
    const sent = headers.filter(([name]) => name !== "content-length");
    this.#template = new Response(bytes, { status: 200, headers: sent });
  }

  /** A fresh 200 answer with the bytes (each call may be sent once). */
  okResponse(): Response {
    return this.#template.clone();
  }

  /** A copy of the bytes, for what is not a plain 200 (a range, a manifest read). */
  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.#template.clone().arrayBuffer());
  }
}

export interface SmallPieceCacheOptions {
  /** Largest piece kept (bytes). */
  maxPieceBytes: number;
  /** Total bytes kept; 0 disables the cache. */
  maxTotalBytes: number;
}

export class SmallPieceCache {
  readonly #options: SmallPieceCacheOptions;
  readonly #entries = new Map<string, CachedPiece>();
  #totalBytes = 0;

  constructor(options: SmallPieceCacheOptions) {
    this.#options = options;
  }

  accepts(size: number): boolean {
    return size <= this.#options.maxPieceBytes && size <= this.#options.maxTotalBytes;
  }

  get(cid: string): CachedPiece | undefined {
    const entry = this.#entries.get(cid);
    if (entry) entry.recentlyUsed = true;
    return entry;
  }

  /** Forgets a cid's entry (its stored bytes failed verification). */
  delete(cid: string): void {
    const entry = this.#entries.get(cid);
    if (entry === undefined) return;
    this.#entries.delete(cid);
    this.#totalBytes -= entry.byteLength;
  }

  set(cid: string, entry: CachedPiece): void {
    if (!this.accepts(entry.byteLength) || this.#entries.has(cid)) return;
    this.#entries.set(cid, entry);
    this.#totalBytes += entry.byteLength;
    while (this.#totalBytes > this.#options.maxTotalBytes) {
      // The oldest entry goes, unless it was used since: then it moves to the back, once.
      const [key, oldest] = this.#entries.entries().next().value!;
      this.#entries.delete(key);
      if (oldest.recentlyUsed && oldest !== entry) {
        oldest.recentlyUsed = false;
        this.#entries.set(key, oldest);
      } else {
        this.#totalBytes -= oldest.byteLength;
      }
    }
  }
}
