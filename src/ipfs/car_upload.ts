/**
 * What an upload with `Content-Type: application/vnd.ipld.car` adds to any
 * upload: its bytes are parsed while they stream (every block checked
 * against its cid), the blocks it holds are collected for the block index,
 * and its roots are reported. The piece itself is stored like any other.
 *
 * A chunk of tiny blocks is thousands of hashes (a MiB of 8-byte blocks took
 * 0.2-0.4 s), so a chunk is checked in slices of the event loop's budget
 * (kernel/turns.ts), and the upload waits for the rest after a turn.
 *
 * Why a chunk of many blocks ends with a turn even when it fit in a slice:
 * the next chunk is usually in the socket already, and reads that complete
 * back to back run one after the other without the event loop reaching its
 * timers. Each chunk's check of a million-block CAR took just under a slice
 * (9-10 ms), and the service's 10 ms tick came 70-170 ms late, with no
 * slice over its budget.
 */
import { BlockList } from "./block_list.ts";
import { CarFormatError, CarStreamVerifier } from "./car_stream.ts";
import type { CarStreamLimits } from "./car_stream.ts";
import { SLICE_MS, yieldToEventLoop } from "../kernel/turns.ts";

/** Bytes checked between two looks at the clock. */
const CHECK_STEP_BYTES = 16 * 1024;
/** Blocks after which a chunk's check ends with a turn of the event loop (about 1-3 ms of work). */
const BLOCKS_PER_TURN = 2048;

export const CAR_MEDIA_TYPE = "application/vnd.ipld.car";

/** True for `application/vnd.ipld.car`, with or without parameters, in any case. */
export function isCarMediaType(contentType: string): boolean {
  return contentType.split(";", 1)[0].trim().toLowerCase() === CAR_MEDIA_TYPE;
}

/** Most blocks one CAR upload may hold: its index is kept in memory until the commit. */
export const MAX_BLOCKS_PER_CAR = 1_000_000;

export class CarUpload {
  readonly blocks = new BlockList();
  readonly #parser: CarStreamVerifier;
  /** Blocks checked since the event loop last had a turn. */
  #blocksThisTurn = 0;
  /** The first problem found while the body streamed (the store saw it only as a failure). */
  #problem: CarFormatError | null = null;

  constructor(limits: CarStreamLimits = {}) {
    this.#parser = new CarStreamVerifier({
      limits: { maxBlocks: MAX_BLOCKS_PER_CAR, ...limits },
      onBlock: (block) => {
        this.#blocksThisTurn++;
        this.blocks.add(block.multihash, block.offset, block.length);
      },
    });
  }

  /**
   * For the upload's chunk hook: throws (and remembers) the first problem, to
   * stop the body. A chunk that takes longer than a slice is finished after a
   * turn of the event loop: the promise says when (the chunk must stay as it
   * is until then).
   */
  onChunk(chunk: Uint8Array): Promise<void> | undefined {
    const deadline = performance.now() + SLICE_MS;
    for (let at = 0; at < chunk.length;) {
      const end = Math.min(at + CHECK_STEP_BYTES, chunk.length);
      this.#push(chunk.subarray(at, end));
      at = end;
      if (at < chunk.length && performance.now() >= deadline) {
        return this.#later(chunk.subarray(at));
      }
    }
    return this.#blocksThisTurn >= BLOCKS_PER_TURN ? this.#turn() : undefined;
  }

  async #later(rest: Uint8Array): Promise<void> {
    await this.#turn();
    await this.onChunk(rest);
  }

  #turn(): Promise<void> {
    this.#blocksThisTurn = 0;
    return yieldToEventLoop();
  }

  #push(bytes: Uint8Array): void {
    try {
      this.#parser.push(bytes);
    } catch (error) {
      if (error instanceof CarFormatError) this.#problem ??= error;
      throw error;
    }
  }

  /** The problem that stopped the body, if the CAR is what stopped it. */
  get problem(): CarFormatError | null {
    return this.#problem;
  }

  /**
   * After the last byte: the roots (cids as strings); throws CarFormatError if
   * it ended early. The blocks are then in multihash order, the block index's
   * (block_list.ts says why), sorted in slices of the event loop's budget.
   */
  async finish(): Promise<{ roots: string[] }> {
    const summary = this.#parser.end();
    await this.blocks.sortByMultihash();
    return { roots: summary.roots.map((root) => root.toString()) };
  }
}
