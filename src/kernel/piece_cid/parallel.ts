/**
 * Piece commitment over several cores: whole segments (see segment.ts) are
 * hashed by a Worker pool while bytes keep arriving; their roots are stitched
 * in order by a kernel on this thread, which also hashes the final partial
 * segment. Without a pool, segments are hashed on this thread as they fill.
 *
 * update() returns a Promise when too many segments are in flight: await it
 * to apply backpressure to the producer (a network body, a file).
 */
import { createKernel } from "./kernel.ts";
import type { CommpKernel } from "./kernel.ts";
import { treeShape } from "./hasher.ts";
import type { PieceDigest } from "./hasher.ts";
import type { HashWorkerPool } from "./pool.ts";
import { SEGMENT_BYTES, SEGMENT_CHUNKS, SEGMENT_LEVEL } from "./segment.ts";

export interface ParallelHasherOptions {
  pool: HashWorkerPool | null;
  /**
   * Segments on the pool at once before update() asks the producer to wait;
   * default twice the pool's size (every core). A background pass takes 1,
   * so it keeps one Worker busy at most and leaves the rest to uploads.
   */
  maxInFlight?: number;
}

export class ParallelPieceHasher {
  readonly #pool: HashWorkerPool | null;
  readonly #maxInFlight: number;
  readonly #kernel: CommpKernel;
  #segment: Uint8Array | null = null;
  #filled = 0;
  #size = 0;
  #dispatched = 0;
  #stitched = 0;
  readonly #roots = new Map<number, Uint8Array>();
  readonly #inFlight = new Set<Promise<void>>();
  #failure: unknown = null;

  constructor(options: ParallelHasherOptions) {
    this.#pool = options.pool;
    this.#maxInFlight = options.maxInFlight ?? (options.pool ? options.pool.size * 2 : Infinity);
    this.#kernel = createKernel();
  }

  get size(): number {
    return this.#size;
  }

  /** Adds bytes (copied: the caller may reuse its buffer at once). */
  update(bytes: Uint8Array): Promise<void> | undefined {
    if (this.#failure) throw this.#failure;
    this.#size += bytes.byteLength;
    let offset = 0;
    while (offset < bytes.byteLength) {
      const segment = this.#segment ??= this.#newSegment();
      const take = Math.min(SEGMENT_BYTES - this.#filled, bytes.byteLength - offset);
      segment.set(bytes.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === SEGMENT_BYTES) this.#dispatch();
    }
    if (this.#inFlight.size >= this.#maxInFlight) return Promise.race(this.#inFlight);
    return undefined;
  }

  async digest(): Promise<PieceDigest> {
    await Promise.all(this.#inFlight);
    if (this.#failure) throw this.#failure;
    const { io } = this.#kernel;
    const whole = Math.floor(this.#filled / 127);
    if (this.#filled > 0) io.set(this.#segment!.subarray(0, this.#filled));
    if (whole > 0) {
      this.#kernel.update(whole);
      io.copyWithin(0, whole * 127, this.#filled);
    }
    const { height, padding } = treeShape(this.#size);
    this.#kernel.finish(this.#filled - whole * 127, height);
    return { root: io.slice(0, 32), height, padding, size: this.#size };
  }

  #newSegment(): Uint8Array {
    return new Uint8Array(this.#pool ? this.#pool.takeBuffer() : new ArrayBuffer(SEGMENT_BYTES));
  }

  #dispatch(): void {
    const segment = this.#segment!;
    this.#segment = null;
    this.#filled = 0;
    const index = this.#dispatched++;
    if (this.#pool === null) {
      this.#kernel.io.set(segment);
      this.#kernel.update(SEGMENT_CHUNKS);
      this.#stitched++;
      this.#segment = segment;
      return;
    }
    const task: Promise<void> = this.#pool.hash(segment.buffer as ArrayBuffer).then(
      (root) => {
        this.#roots.set(index, root);
        this.#stitch();
      },
      (error) => {
        this.#failure ??= error;
      },
    ).finally(() => this.#inFlight.delete(task));
    this.#inFlight.add(task);
  }

  /** Pushes finished roots onto the tree in segment order. */
  #stitch(): void {
    let root: Uint8Array | undefined;
    while ((root = this.#roots.get(this.#stitched)) !== undefined) {
      this.#roots.delete(this.#stitched);
      this.#kernel.io.set(root);
      this.#kernel.pushSubtree(SEGMENT_LEVEL);
      this.#stitched++;
    }
  }
}
