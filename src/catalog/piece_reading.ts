/**
 * One read of a stored piece for everything the background pass still needs
 * of it (catalog/digests.ts): its SHA-256 when unknown, and its PieceCIDv2,
 * both from the same bytes as they stream, so a piece uploaded under an
 * opaque or sha2-256 cid is read once, not twice.
 *
 * Paced for running beside uploads: the PieceCIDv2's segments go to the
 * shared hash worker pool one at a time (a second waits for the first), so
 * the pass keeps at most one Worker busy and the uploads that verify piece
 * cids keep the others; without a pool, the event loop is given back after
 * every chunk.
 */
import { createHash } from "node:crypto";
import type { PieceStore } from "../driver/driver.ts";
import { ParallelPieceHasher } from "../kernel/piece_cid/parallel.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { pieceCidV2 } from "../kernel/piece_cid/cid_codec.ts";

export interface PieceReadOptions {
  store: PieceStore;
  pool: HashWorkerPool | null;
  cid: string;
  /** Compute the SHA-256 on the way too. */
  sha256: boolean;
  /** Aborting abandons the read (it throws the signal's reason). */
  signal: AbortSignal;
}

export interface PieceReadResult {
  /** Null when it was not asked for. */
  sha256: string | null;
  pieceCidV2: string;
  size: number;
}

/** Reads the piece once; null when the store has no bytes under its cid. */
export async function readStoredPiece(options: PieceReadOptions): Promise<PieceReadResult | null> {
  const { signal } = options;
  signal.throwIfAborted();
  const opened = await options.store.open(options.cid);
  if (opened === null) return null;
  const hash = options.sha256 ? createHash("sha256") : null;
  const hasher = new ParallelPieceHasher({ pool: options.pool, maxInFlight: 1 });
  const chunks = chunksOf(opened.body);
  try {
    for (;;) {
      const { done, value } = await chunks.next();
      if (done) break;
      signal.throwIfAborted();
      hash?.update(value);
      const wait = hasher.update(value);
      if (wait) await wait;
      else if (options.pool === null) await new Promise((resolve) => setTimeout(resolve, 0));
    }
  } finally {
    await chunks.cancel();
  }
  const digest = await hasher.digest();
  return {
    sha256: hash === null ? null : hash.digest("hex"),
    pieceCidV2: pieceCidV2(digest.root, digest.height, digest.padding),
    size: digest.size,
  };
}

/** Bytes read into one buffer at a time (a byte stream's BYOB reader), so the pass leaves no garbage. */
const READ_BUFFER_BYTES = 1024 * 1024;

interface Chunks {
  next(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(): Promise<void>;
}

/**
 * The stream's chunks. A byte stream (the disk driver's files) is read into one reused buffer:
 * a pass over a 1 GiB piece through its default reader left about 50 MiB of read buffers for the
 * garbage collector, which the 1 GiB memory check saw as growth. Other streams are read as they come.
 */
function chunksOf(body: ReadableStream<Uint8Array>): Chunks {
  let byob: ReadableStreamBYOBReader | null = null;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    const reader = body.getReader();
    return { next: () => reader.read(), cancel: () => reader.cancel().catch(() => {}) };
  }
  const reader = byob;
  let buffer = new ArrayBuffer(READ_BUFFER_BYTES);
  return {
    async next() {
      const result = await reader.read(new Uint8Array(buffer));
      // The chunk is hashed before the next read, so its buffer can be read into again.
      if (result.value) buffer = result.value.buffer as ArrayBuffer;
      return result.done ? { done: true, value: undefined } : { done: false, value: result.value! };
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}
