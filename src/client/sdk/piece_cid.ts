/**
 * Piece cids on the client, with the server's own kernel: src/kernel/piece_cid's
 * WASM hasher, on a HashWorkerPool where Workers exist (the pool's Workers
 * start from a data: URL, so this works in a browser bundle too). Also the
 * abortable chunk reader every hashing loop of the SDK uses: a signal must
 * stop a read that is waiting, not just the next one.
 */
import {
  HashWorkerPool,
  ParallelPieceHasher,
  pieceCidV1,
  pieceCidV2,
} from "../../kernel/piece_cid/mod.ts";
import type { PieceDigest } from "../../kernel/piece_cid/mod.ts";
import { byteSourceOf } from "./sources.ts";
import type { UploadSource } from "./types.ts";

export interface PieceCid {
  /** PieceCIDv2 (bafkzcib…): root, height and padding; fixes the size. */
  cid: string;
  /** PieceCIDv1 (baga6ea4seaq…): the root alone. */
  cidV1: string;
  size: number;
}

export interface PieceCidOptions {
  signal?: AbortSignal;
  /**
   * Workers to hash on: a pool to use (not closed here), null or 0 for the
   * calling thread, a count for a pool made for this call. Default: one
   * Worker per CPU (at most 8) where Workers exist.
   */
  pool?: HashWorkerPool | null | number;
  /** Called after every chunk with the bytes hashed so far. */
  onProgress?: (bytesHashed: number) => void;
}

export type CidSource = UploadSource | ReadableStream<Uint8Array>;

/** The PieceCIDv2 (and v1) of bytes, a Blob, a ByteSource or a stream. */
export async function pieceCid(
  source: CidSource,
  options: PieceCidOptions = {},
): Promise<PieceCid> {
  const stream = source instanceof ReadableStream ? source : wholeStream(source);
  const ownPool = typeof options.pool === "number" || options.pool === undefined;
  const pool = ownPool
    ? newPool(options.pool as number | undefined)
    : options.pool as HashWorkerPool | null;
  try {
    const hasher = new ParallelPieceHasher({ pool });
    for await (const chunk of readChunks(stream, options.signal, { reuseBytes: 1024 * 1024 })) {
      const wait = hasher.update(chunk);
      if (wait) await wait;
      options.onProgress?.(hasher.size);
    }
    return cidsOf(await hasher.digest());
  } finally {
    if (ownPool) pool?.close();
  }
}

/**
 * A hash pool of `workers` Workers (default: per CPU) started from workerUrl
 * (default: a data: URL), or null where Workers cannot run.
 */
export function newPool(workers?: number, workerUrl?: string): HashWorkerPool | null {
  if (workers === 0 || typeof Worker !== "function") return null;
  return new HashWorkerPool({ workers, workerUrl });
}

export function cidsOf(digest: PieceDigest): PieceCid {
  return {
    cid: pieceCidV2(digest.root, digest.height, digest.padding),
    cidV1: pieceCidV1(digest.root),
    size: digest.size,
  };
}

function wholeStream(source: UploadSource): ReadableStream<Uint8Array> {
  const bytes = byteSourceOf(source);
  return bytes.stream(0, bytes.size);
}

/**
 * The chunks of a stream until it ends. An abort cancels the stream and
 * throws the signal's reason, even while a read is pending; leaving the loop
 * early (break, throw) cancels the stream too.
 *
 * With `reuseBytes`, a byte stream (a Blob's, a fileSource's) is read into
 * one buffer of that size, over and over: each chunk is then valid only until
 * the loop asks for the next, so use it only where chunks are copied at once
 * (hashing). Allocating a fresh chunk per read left a file's worth of garbage
 * for the collector to find late (transient RSS of several pieces).
 */
export async function* readChunks(
  stream: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
  options: { reuseBytes?: number } = {},
): AsyncGenerator<Uint8Array, void, undefined> {
  signal?.throwIfAborted();
  const byob = options.reuseBytes ? byobReaderOf(stream) : null;
  const reader = byob ?? stream.getReader();
  let buffer = byob ? new ArrayBuffer(options.reuseBytes!) : null;
  let aborted: Promise<never> | null = null;
  let onAbort: (() => void) | null = null;
  if (signal) {
    aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    aborted.catch(() => {}); // observed through the race below
  }
  let done = false;
  try {
    while (true) {
      const read: Promise<ReadableStreamReadResult<Uint8Array>> = byob
        ? byob.read(new Uint8Array(buffer!))
        : (reader as ReadableStreamDefaultReader<Uint8Array>).read();
      read.catch(() => {}); // a read the abort overtook settles unobserved
      const result = aborted ? await Promise.race([read, aborted]) : await read;
      if (result.done) {
        done = true;
        return;
      }
      if (byob) buffer = result.value.buffer as ArrayBuffer; // the same memory, handed back
      yield result.value;
    }
  } finally {
    if (onAbort) signal!.removeEventListener("abort", onAbort);
    if (!done) await reader.cancel(signal?.reason).catch(() => {});
    reader.releaseLock();
  }
}

function byobReaderOf(stream: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | null {
  try {
    return stream.getReader({ mode: "byob" });
  } catch {
    return null; // not a byte stream
  }
}
