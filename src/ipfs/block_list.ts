/**
 * The blocks one CAR upload found, held until its piece is committed and the
 * block index written: each block's multihash, offset and length, packed in
 * growing typed arrays (about 50 bytes a block instead of a few hundred as
 * objects), so a CAR of a million small blocks stays a few tens of MiB.
 *
 * Identity blocks are left out: their data is in their cid, nothing to find.
 */
import { IDENTITY_MULTIHASH } from "./multihash.ts";
import type { CarBlock } from "./car_stream.ts";

/** Where one block lies in a piece, found by its multihash (code, length, digest). */
export interface BlockLocation {
  multihash: Uint8Array;
  offset: number;
  length: number;
}

export class BlockList {
  #multihashes = new Uint8Array(4096);
  #multihashEnd = new Uint32Array(64); // end of the i-th multihash in #multihashes
  #offsets = new Float64Array(64);
  #lengths = new Uint32Array(64);
  #count = 0;

  get size(): number {
    return this.#count;
  }

  /** Adds a verified block (identity blocks are skipped). */
  add(block: CarBlock): void {
    if (block.cid.multihash.code === IDENTITY_MULTIHASH) return;
    const multihash = block.cid.multihash.bytes;
    if (this.#count === this.#offsets.length) this.#growRows();
    const start = this.#count === 0 ? 0 : this.#multihashEnd[this.#count - 1];
    if (start + multihash.length > this.#multihashes.length) {
      this.#multihashes = grown(this.#multihashes, start + multihash.length);
    }
    this.#multihashes.set(multihash, start);
    this.#multihashEnd[this.#count] = start + multihash.length;
    this.#offsets[this.#count] = block.offset;
    this.#lengths[this.#count] = block.length;
    this.#count++;
  }

  /** The blocks in the order they came (the multihash is a view: copy it to keep it). */
  *[Symbol.iterator](): IterableIterator<BlockLocation> {
    let start = 0;
    for (let i = 0; i < this.#count; i++) {
      const end = this.#multihashEnd[i];
      yield {
        multihash: this.#multihashes.subarray(start, end),
        offset: this.#offsets[i],
        length: this.#lengths[i],
      };
      start = end;
    }
  }

  #growRows() {
    this.#multihashEnd = grown(this.#multihashEnd, this.#count + 1);
    this.#offsets = grown(this.#offsets, this.#count + 1);
    this.#lengths = grown(this.#lengths, this.#count + 1);
  }
}

type Growable = Uint8Array | Uint32Array | Float64Array;

/** A copy of `array` at least `atLeast` long (doubling, so adding stays linear). */
function grown<T extends Growable>(array: T, atLeast: number): T {
  const bigger = new (array.constructor as new (length: number) => T)(
    Math.max(atLeast, array.length * 2),
  );
  bigger.set(array as never);
  return bigger;
}
