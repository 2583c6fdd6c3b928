/**
 * The blocks one CAR upload found, held until its piece is committed and the
 * block index written: each block's multihash, offset and length, packed in
 * typed arrays of fixed-size pages (about 51 bytes a block for a sha2-256
 * multihash), so a CAR of a million small blocks holds about 50 MiB.
 *
 * Why pages and not one array grown by doubling: a doubling copied up to
 * 64 MiB in one synchronous step (70 ms on the serving thread near a million
 * blocks) and left up to half of the last array unused; a page is allocated
 * once and never copied (4,096 rows and 64 KiB of multihashes each).
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

/** Where one block lies in a piece, found by its multihash (code, length, digest). */
export interface BlockLocation {
  multihash: Uint8Array;
  offset: number;
  length: number;
}

const ROW_SHIFT = 12; // 4,096 rows a page (70 KiB): a small CAR stays small
const ROWS_PER_PAGE = 1 << ROW_SHIFT;
const ROW_MASK = ROWS_PER_PAGE - 1;
const BYTE_SHIFT = 16; // 64 KiB of multihashes a page; a multihash never straddles two
const BYTES_PER_PAGE = 1 << BYTE_SHIFT;
const BYTE_MASK = BYTES_PER_PAGE - 1;
/** Rows between two looks at the clock in the sort (reading 16,384 keys took up to 10 ms). */
const SORT_RANGE = 4096;
/** A multihash is at most this long (a cid is read in 128 bytes at most). */
const MAX_MULTIHASH_BYTES = 255;

export class BlockList {
  readonly #bytePages: Uint8Array[] = [];
  /** Where the next multihash goes, counted across pages (page << BYTE_SHIFT | at). */
  #byteEnd = 0;
  readonly #starts: Uint32Array[] = [];
  readonly #sizes: Uint8Array[] = [];
  readonly #offsets: Float64Array[] = [];
  readonly #lengths: Uint32Array[] = [];
  #count = 0;
  /** The order to hand the blocks over in (indexes into the rows); null: the order they came. */
  #order: Uint32Array | null = null;

  get size(): number {
    return this.#count;
  }

  /** Bytes of typed arrays the list holds (its pages; the sort's order once sorted). */
  get heldBytes(): number {
    const pages = this.#bytePages.length * BYTES_PER_PAGE;
    const rows = this.#starts.length * ROWS_PER_PAGE * (4 + 1 + 8 + 4);
    return pages + rows + (this.#order?.byteLength ?? 0);
  }

  /** Adds a verified block by its multihash (copied); identity blocks are skipped. */
  add(multihash: Uint8Array, offset: number, length: number): void {
    if (multihash[0] === IDENTITY_MULTIHASH) return;
    if (multihash.length > MAX_MULTIHASH_BYTES) throw new RangeError("multihash too long");
    const row = this.#count;
    if ((row & ROW_MASK) === 0) {
      this.#starts.push(new Uint32Array(ROWS_PER_PAGE));
      this.#sizes.push(new Uint8Array(ROWS_PER_PAGE));
      this.#offsets.push(new Float64Array(ROWS_PER_PAGE));
      this.#lengths.push(new Uint32Array(ROWS_PER_PAGE));
    }
    let start = this.#byteEnd;
    if (
      (start & BYTE_MASK) + multihash.length > BYTES_PER_PAGE ||
      (start >>> BYTE_SHIFT) === this.#bytePages.length
    ) {
      if ((start & BYTE_MASK) !== 0) start = (this.#bytePages.length) * BYTES_PER_PAGE;
      this.#bytePages.push(new Uint8Array(BYTES_PER_PAGE));
    }
    this.#bytePages[start >>> BYTE_SHIFT].set(multihash, start & BYTE_MASK);
    this.#byteEnd = start + multihash.length;
    const page = row >>> ROW_SHIFT;
    const at = row & ROW_MASK;
    this.#starts[page][at] = start;
    this.#sizes[page][at] = multihash.length;
    this.#offsets[page][at] = offset;
    this.#lengths[page][at] = length;
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
      const page = i >>> ROW_SHIFT;
      const at = i & ROW_MASK;
      const start = this.#starts[page][at];
      const from = start & BYTE_MASK;
      yield {
        multihash: this.#bytePages[start >>> BYTE_SHIFT].subarray(
          from,
          from + this.#sizes[page][at],
        ),
        offset: this.#offsets[page][at],
        length: this.#lengths[page][at],
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
        high[i] = this.#word(i, 0);
        low[i] = this.#word(i, 4);
        order[i] = i;
      }
    }, SORT_RANGE);
    for (const [keys, shift] of [[low, 0], [low, 16], [high, 0], [high, 16]] as const) {
      const next = new Uint32Array(65_537); // where each digit's run starts, after the counts
      await inRanges(count, (from, to) => {
        for (let k = from; k < to; k++) next[((keys[order[k]] >>> shift) & 0xffff) + 1]++;
      }, SORT_RANGE);
      for (let digit = 1; digit < next.length; digit++) next[digit] += next[digit - 1];
      await inRanges(count, (from, to) => {
        for (let k = from; k < to; k++) {
          const row = order[k];
          spare[next[(keys[row] >>> shift) & 0xffff]++] = row;
        }
      }, SORT_RANGE);
      [order, spare] = [spare, order];
      await yieldToEventLoop(); // between passes too: a pass of a few ranges is one slice
    }
    this.#order = order;
  }

  /** Four bytes of row's multihash from `first`, big-endian, zeros past its end. */
  #word(row: number, first: number): number {
    const page = row >>> ROW_SHIFT;
    const at = row & ROW_MASK;
    const size = this.#sizes[page][at];
    const start = this.#starts[page][at];
    const bytes = this.#bytePages[start >>> BYTE_SHIFT];
    const from = start & BYTE_MASK;
    let word = 0;
    for (let j = first; j < first + 4; j++) word = word * 256 + (j < size ? bytes[from + j] : 0);
    return word;
  }
}
