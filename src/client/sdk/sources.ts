/**
 * Every upload source as one random-access shape (ByteSource): an upload
 * reads the file twice, once streaming to hash it and once per piece as the
 * request body, so sources must hand out any range again. Byte arrays are
 * served as views (no copy); Blobs (a browser File too) as slices, which the
 * runtime reads lazily.
 *
 * A piece's request body is a Blob slice when the source is a Blob: fetch
 * copies an array body (the Fetch standard copies a BufferSource; Deno does
 * too), but sends a Blob as it is, which a browser streams from disk. Other
 * sources give their bytes.
 */
import type { ByteSource, UploadSource } from "./types.ts";

/** Chunk size for streaming a byte array: hashing progress and aborts act at this grain. */
const ARRAY_CHUNK_BYTES = 1024 * 1024;

/** A source that can also give a range as a request body, sized, read as late as possible. */
export interface UploadableSource extends ByteSource {
  body(start: number, end: number): Promise<Blob | Uint8Array<ArrayBuffer>>;
}

export function byteSourceOf(source: UploadSource): UploadableSource {
  if (source instanceof Uint8Array) return arraySource(source);
  if (source instanceof Blob) return blobSource(source);
  if (isByteSource(source)) {
    return {
      size: source.size,
      stream: (start, end) => source.stream(start, end),
      bytes: (start, end) => source.bytes(start, end),
      body: (start, end) => source.bytes(start, end),
    };
  }
  throw new TypeError("Cannot upload this source: pass a Uint8Array, a Blob or a ByteSource");
}

/** The name and type a source carries itself (a browser File, a fileSource). */
export function describedBy(source: UploadSource): { name: string | null; type: string | null } {
  const named = source as { name?: unknown; type?: unknown };
  return {
    name: typeof named.name === "string" && named.name !== "" ? named.name : null,
    type: typeof named.type === "string" && named.type !== "" ? named.type : null,
  };
}

function isByteSource(value: unknown): value is ByteSource {
  const candidate = value as Partial<ByteSource> | null;
  return typeof candidate === "object" && candidate !== null &&
    typeof candidate.size === "number" && typeof candidate.stream === "function" &&
    typeof candidate.bytes === "function";
}

function arraySource(array: Uint8Array<ArrayBuffer>): UploadableSource {
  const bytes = (start: number, end: number) => {
    checkRange(start, end, array.byteLength);
    return Promise.resolve(array.subarray(start, end));
  };
  return {
    size: array.byteLength,
    stream(start, end) {
      checkRange(start, end, array.byteLength);
      let offset = start;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= end) return controller.close();
          const next = Math.min(end, offset + ARRAY_CHUNK_BYTES);
          controller.enqueue(array.subarray(offset, next));
          offset = next;
        },
      });
    },
    bytes,
    body: bytes,
  };
}

function blobSource(blob: Blob): UploadableSource {
  return {
    size: blob.size,
    stream(start, end) {
      checkRange(start, end, blob.size);
      return blob.slice(start, end).stream();
    },
    async bytes(start, end) {
      checkRange(start, end, blob.size);
      return new Uint8Array(await blob.slice(start, end).arrayBuffer());
    },
    body(start, end) {
      checkRange(start, end, blob.size);
      return Promise.resolve(blob.slice(start, end));
    },
  };
}

function checkRange(start: number, end: number, size: number): void {
  if (!(0 <= start && start <= end && end <= size)) {
    throw new RangeError(`Range [${start}, ${end}) is outside a source of ${size} bytes`);
  }
}
