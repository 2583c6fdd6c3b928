/**
 * Streaming piece commitment: feed bytes in any chunking, get the FRC-0069
 * tree root, height and padding. The kernel does the hashing; this class only
 * gathers bytes into whole 127-byte chunks in the kernel's input window.
 *
 * @example
 * const hasher = new PieceHasher();
 * hasher.update(bytes);
 * const { root, height, padding } = hasher.digest();
 */
import { createKernel } from "./kernel.ts";
import type { CommpKernel } from "./kernel.ts";

export interface PieceDigest {
  /** The 32-byte root of the padded binary tree. */
  root: Uint8Array;
  /** Tree height: log2 of the number of 32-byte leaves. */
  height: number;
  /** Zero bytes appended to the payload so that its Fr32 expansion is a full tree. */
  padding: number;
  /** Payload size in bytes. */
  size: number;
}

/** Height and padding of the tree over a payload of `size` bytes (FRC-0069). */
export function treeShape(size: number): { height: number; padding: number } {
  // The unpadded size of a full tree is 127 * 2^i bytes (i >= 0); height is i + 2.
  let unpadded = 127;
  let height = 2;
  while (unpadded < size) {
    unpadded *= 2;
    height++;
  }
  return { height, padding: unpadded - size };
}

export class PieceHasher {
  readonly #kernel: CommpKernel;
  /** Bytes waiting in the kernel's window (always fewer than a full window). */
  #buffered = 0;
  #size = 0;

  constructor() {
    this.#kernel = createKernel();
  }

  get size(): number {
    return this.#size;
  }

  update(bytes: Uint8Array): void {
    const { io, chunksPerUpdate } = this.#kernel;
    this.#size += bytes.byteLength;
    let offset = 0;
    while (offset < bytes.byteLength) {
      const take = Math.min(io.byteLength - this.#buffered, bytes.byteLength - offset);
      io.set(bytes.subarray(offset, offset + take), this.#buffered);
      this.#buffered += take;
      offset += take;
      if (this.#buffered === io.byteLength) {
        this.#kernel.update(chunksPerUpdate);
        this.#buffered = 0;
      }
    }
  }

  digest(): PieceDigest {
    const { io } = this.#kernel;
    const whole = Math.floor(this.#buffered / 127);
    if (whole > 0) {
      this.#kernel.update(whole);
      io.copyWithin(0, whole * 127, this.#buffered);
    }
    const { height, padding } = treeShape(this.#size);
    this.#kernel.finish(this.#buffered - whole * 127, height);
    const digest = { root: io.slice(0, 32), height, padding, size: this.#size };
    this.reset();
    return digest;
  }

  reset(): void {
    this.#kernel.reset();
    this.#buffered = 0;
    this.#size = 0;
  }
}
