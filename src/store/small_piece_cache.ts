/**
 * Small pieces kept in memory with their response headers precomputed.
 * Pieces never change, so an entry is never stale; the cache is a bounded LRU
 * (Map insertion order) by total bytes. Serving a 1 KiB piece from here skips
 * the database lookup, open, stat and stream setup of the disk path.
 */
export interface CachedPiece {
  bytes: Uint8Array<ArrayBuffer>;
  /** Every header of a 200 answer, in order (CORS included). */
  headers: readonly [string, string][];
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
    if (entry) {
      // Most recently used goes last.
      this.#entries.delete(cid);
      this.#entries.set(cid, entry);
    }
    return entry;
  }

  set(cid: string, entry: CachedPiece): void {
    if (!this.accepts(entry.bytes.byteLength) || this.#entries.has(cid)) return;
    this.#entries.set(cid, entry);
    this.#totalBytes += entry.bytes.byteLength;
    for (const [key, old] of this.#entries) {
      if (this.#totalBytes <= this.#options.maxTotalBytes) break;
      this.#entries.delete(key);
      this.#totalBytes -= old.bytes.byteLength;
    }
  }
}
