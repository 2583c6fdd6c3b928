/**
 * Reads a byte stream chunk by chunk, into one reused buffer when the stream
 * supports BYOB (Deno request bodies do). Reusing the buffer means a 1 GiB
 * upload allocates nothing per chunk, which keeps the server's memory flat;
 * other streams fall back to the default reader.
 *
 * A chunk from `next()` is valid only until the following `next()` call.
 */
const MAX_BUFFER_BYTES = 1 << 20;
const MIN_BUFFER_BYTES = 16 << 10;

export interface ChunkReader {
  /** The next chunk, or null at the end of the stream. */
  next(): Promise<Uint8Array | null>;
  cancel(reason?: unknown): Promise<void>;
  release(): void;
}

/**
 * @param expectedBytes how much the stream will deliver, when known: the buffer
 *   is never larger than needed (a 1 KiB upload must not pin 1 MiB).
 */
export function createChunkReader(
  stream: ReadableStream<Uint8Array>,
  expectedBytes = MAX_BUFFER_BYTES,
): ChunkReader {
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
  const size = Math.max(MIN_BUFFER_BYTES, Math.min(MAX_BUFFER_BYTES, expectedBytes));
  let buffer: ArrayBuffer = new ArrayBuffer(size);
  return {
    next: async () => {
      const { done, value } = await reader.read(new Uint8Array(buffer));
      if (done) return null;
      // The read transferred the buffer into `value`; take it back for the next read.
      buffer = value.buffer as ArrayBuffer;
      return value;
    },
    cancel: (reason) => reader.cancel(reason),
    release: () => reader.releaseLock(),
  };
}
