/**
 * SHA-256 of a small block, on this thread, allocating nothing: the CAR check
 * of a million 8-byte blocks spent most of its time not hashing but making a
 * node:crypto Hash per block (an op to create it, one to digest, a Buffer for
 * the answer) and collecting them afterwards. A block of up to a few hundred
 * bytes is a handful of compressions, cheaper here than one round trip to
 * the native hasher; larger blocks still stream through node:crypto.
 */

import {
  SHA256_INITIAL_STATE,
  sha256Compress,
  sha256CompressLast,
} from "../kernel/sha256_compress.ts";

const state = new Int32Array(8);
const words = new Int32Array(64);
const tail = new Uint8Array(64); // the last bytes, then the padding

/** True when data[from, to) hashes (SHA-256) to expected[at, at + 32). */
export function sha256Matches(
  data: Uint8Array,
  from: number,
  to: number,
  expected: Uint8Array,
  at: number,
): boolean {
  state.set(SHA256_INITIAL_STATE);
  let p = from;
  for (; p + 64 <= to; p += 64) sha256Compress(state, words, data, p);
  tail.set(data.subarray(p, to));
  sha256CompressLast(state, words, tail, to - p, to - from);
  for (let i = 0; i < 8; i++) {
    const word = state[i];
    const j = at + i * 4;
    if (
      expected[j] !== (word >>> 24) || expected[j + 1] !== ((word >>> 16) & 0xff) ||
      expected[j + 2] !== ((word >>> 8) & 0xff) || expected[j + 3] !== (word & 0xff)
    ) return false;
  }
  return true;
}
