/**
 * Reads a byte stream chunk by chunk, into one reused buffer when the stream
 * supports BYOB (Deno request bodies do). Reusing the buffer means a 1 GiB
 * upload allocates nothing per chunk, which keeps the server's memory flat;
 * other streams fall back to the default reader.
 *
 * With one buffer, a chunk from `next()` is valid only until the following
 * `next()` call; with two (`buffers: 2`) the reader alternates between them and
 * a chunk stays valid one call longer, so the caller can write chunk N to disk
 * while chunk N+1 is being read.
 */
const MAX_BUFFER_BYTES = 1 << 20;
const MIN_BUFFER_BYTES = 16 << 10;

export interface ChunkReader {
  /** The next chunk, or null at the end of the stream. */
  next(): Promise<Uint8Array | null>;
  cancel(reason?: unknown): Promise<void>;
  release(): void;
}

export interface ChunkReaderOptions {
  /**
   * How much the stream will deliver, when known: buffers are never larger than
   * needed (a 1 KiB upload must not pin 1 MiB).
   */
  expectedBytes?: number;
  /** 1 (default) or 2 buffers; see the module comment. */
  buffers?: 1 | 2;
}

/** The size of each read buffer for a stream of expectedBytes (what an upload pins while open). */
export function chunkBufferBytes(expectedBytes: number): number {
  return Math.max(MIN_BUFFER_BYTES, Math.min(MAX_BUFFER_BYTES, expectedBytes));
}

export function createChunkReader(
  stream: ReadableStream<Uint8Array>,
  options: ChunkReaderOptions = {},
): ChunkReader {
  const expectedBytes = options.expectedBytes ?? MAX_BUFFER_BYTES;
  let byob: ReadableStreamBYOBReader | null = null;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: read whatever chunks it produces.
  }
  if (byob === null) {
    const reader = stream.getReader();
    return {
      next: async () => {
        const { done, value } = await reader.read();
        return done ? null : value;
      },
      cancel: (reason) => reader.cancel(reason),
      release: () => reader.releaseLock(),
    };
  }
  const reader = byob;
  const size = chunkBufferBytes(expectedBytes);
  const buffers: ArrayBuffer[] = Array.from(
    { length: options.buffers ?? 1 },
    () => new ArrayBuffer(size),
  );
  let turn = 0;
  return {
    next: async () => {
      const slot = turn;
      turn = (turn + 1) % buffers.length;
      const { done, value } = await reader.read(new Uint8Array(buffers[slot]));
      if (done) return null;
      // The read transferred the buffer into `value`; take it back for a later read.
      buffers[slot] = value.buffer as ArrayBuffer;
      return value;
    },
    cancel: (reason) => reader.cancel(reason),
    release: () => reader.releaseLock(),
  };
}
