/**
 * The blocks one CAR upload found, held until its piece is committed and the
 * block index written: each block's multihash, offset and length, packed in
 * growing typed arrays (about 50 bytes a block instead of a few hundred as
 * objects), so a CAR of a million small blocks stays a few tens of MiB.
 *
 * Identity blocks are left out: their data is in their cid, nothing to find.
 *
 * Why the list is handed over sorted by multihash: the index is a B-tree
 * keyed by multihash, and a digest is random, so a million rows written in
 * the order they came touch a page each, all over the tree; every slice's
 * commit wrote (and checkpointed) a thousand pages for a few thousand rows,
 * and a million blocks took minutes, holding the event loop hundreds of ms
 * at a commit. In key order a slice's rows fill a few neighbouring pages.
 * The sort itself runs in slices (a radix sort of the first 8 bytes).
 */
import { IDENTITY_MULTIHASH } from "./multihash.ts";
import { inRanges, yieldToEventLoop } from "../kernel/turns.ts";
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
  /** The order to hand the blocks over in (indexes into the rows); null: the order they came. */
  #order: Uint32Array | null = null;

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
    this.#order = null;
  }

  /**
   * The blocks, in multihash order once sorted, else in the order they came
   * (the multihash is a view: copy it to keep it).
   */
  *[Symbol.iterator](): IterableIterator<BlockLocation> {
    const order = this.#order;
    for (let k = 0; k < this.#count; k++) {
      const i = order === null ? k : order[k];
      yield {
        multihash: this.#multihashes.subarray(this.#startOf(i), this.#multihashEnd[i]),
        offset: this.#offsets[i],
        length: this.#lengths[i],
      };
    }
  }

  /**
   * Puts the blocks in multihash order, byte by byte (the index's key order):
   * an LSD radix sort of each multihash's first 8 bytes in four passes of 16
   * bits, each pass in slices of the event loop's budget. Blocks alike in
   * their first 8 bytes keep the order they came in (for the index's pages,
   * 6 bytes of digest are order enough).
   */
  async sortByMultihash(): Promise<void> {
    const count = this.#count;
    const high = new Uint32Array(count);
    const low = new Uint32Array(count);
    let order = new Uint32Array(count);
    let spare = new Uint32Array(count);
    await inRanges(count, (from, to) => {
      for (let i = from; i < to; i++) {
        const start = this.#startOf(i);
        const end = this.#multihashEnd[i];
        high[i] = this.#word(start, end);
        low[i] = this.#word(start + 4, end);
        order[i] = i;
      }
    });
    for (const [keys, shift] of [[low, 0], [low, 16], [high, 0], [high, 16]] as const) {
      const next = new Uint32Array(65_537); // where each digit's run starts, after the counts
      await inRanges(count, (from, to) => {
        for (let k = from; k < to; k++) next[((keys[order[k]] >>> shift) & 0xffff) + 1]++;
      });
      for (let digit = 1; digit < next.length; digit++) next[digit] += next[digit - 1];
      await inRanges(count, (from, to) => {
        for (let k = from; k < to; k++) {
          const row = order[k];
          spare[next[(keys[row] >>> shift) & 0xffff]++] = row;
        }
      });
      [order, spare] = [spare, order];
      await yieldToEventLoop(); // between passes too: a pass of a few ranges is one slice
    }
    this.#order = order;
  }

  #startOf(i: number): number {
    return i === 0 ? 0 : this.#multihashEnd[i - 1];
  }

  /** Four bytes of #multihashes from `at`, big-endian, zeros past `end`. */
  #word(at: number, end: number): number {
    let word = 0;
    for (let j = at; j < at + 4; j++) word = word * 256 + (j < end ? this.#multihashes[j] : 0);
    return word;
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
