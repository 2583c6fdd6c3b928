/**
 * Parsed manifests, kept for /f/: a manifest never changes (bytes under a cid
 * never do), yet reading one is the whole piece from the store and a
 * JSON.parse of up to 16 MiB (0.18 s for 100,000 pieces), which every HEAD
 * and GET of a split file paid before. Now each is read once and kept.
 *
 * Bounded three ways: the kept manifests weigh at most `maxBytes` together
 * (a parsed manifest is reckoned at twice its JSON; the least recently used
 * go first, and one heavier than the whole bound is used but not kept);
 * requests for a manifest being read wait for that one read (no second
 * parse); and at most `maxLoads` manifests are read at once, so many cold
 * manifests asked at the same moment do not each hold their bytes and their
 * parse in memory together.
 *
 * An entry is tied to the piece's `createdAt`: a piece removed and stored
 * again is read anew. Whether the piece may be served at all is decided
 * before the cache is asked (stored_piece.ts), and a distrusted piece's
 * entry is dropped.
 */
import type { Manifest } from "../../kernel/manifest_format.ts";

export interface ManifestCacheOptions {
  /** Weight all kept manifests may have together (default 64 MiB). */
  maxBytes?: number;
  /** Manifests read and parsed at once at most (default 2). */
  maxLoads?: number;
}

interface Entry {
  createdAt: string;
  manifest: Manifest | null;
  weight: number;
}

/** The weight of a value that is no manifest (kept too, so its bytes are not read again). */
const NOT_A_MANIFEST_WEIGHT = 64;

export class ManifestCache {
  readonly #maxBytes: number;
  readonly #maxLoads: number;
  /** Insertion order is use order: the first key is the least recently used. */
  readonly #entries = new Map<string, Entry>();
  readonly #loading = new Map<string, Promise<Manifest | null>>();
  readonly #waiting: (() => void)[] = [];
  #loads = 0;
  #bytes = 0;

  constructor(options: ManifestCacheOptions = {}) {
    this.#maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    this.#maxLoads = options.maxLoads ?? 2;
  }

  /** Weight kept now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The manifest of the piece (`cid` as stored at `createdAt`, `size` bytes):
   * kept, being read by another request, or read now by `load`.
   */
  async get(
    piece: { cid: string; createdAt: string; size: number },
    load: () => Promise<Manifest | null>,
  ): Promise<Manifest | null> {
    const key = `${piece.cid} ${piece.createdAt}`;
    const kept = this.#entries.get(piece.cid);
    if (kept !== undefined && kept.createdAt === piece.createdAt) {
      this.#entries.delete(piece.cid);
      this.#entries.set(piece.cid, kept);
      return kept.manifest;
    }
    const pending = this.#loading.get(key);
    if (pending !== undefined) return await pending;
    const loading = this.#load(load).then((manifest) => {
      this.#keep(piece.cid, {
        createdAt: piece.createdAt,
        manifest,
        weight: manifest === null ? NOT_A_MANIFEST_WEIGHT : 2 * piece.size,
      });
      return manifest;
    }).finally(() => this.#loading.delete(key));
    this.#loading.set(key, loading);
    return await loading;
  }

  /** Drops what is kept of cid (its stored bytes failed verification). */
  forget(cid: string): void {
    const entry = this.#entries.get(cid);
    if (entry === undefined) return;
    this.#entries.delete(cid);
    this.#bytes -= entry.weight;
  }

  async #load(load: () => Promise<Manifest | null>): Promise<Manifest | null> {
    while (this.#loads >= this.#maxLoads) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#loads++;
    try {
      return await load();
    } finally {
      this.#loads--;
      this.#waiting.shift()?.();
    }
  }

  #keep(cid: string, entry: Entry): void {
    this.forget(cid);
    if (entry.weight > this.#maxBytes) return;
    this.#entries.set(cid, entry);
    this.#bytes += entry.weight;
    while (this.#bytes > this.#maxBytes) this.forget(this.#entries.keys().next().value!);
  }
}
