/**
 * Files on disk as upload sources (Deno only; the SDK core is Web APIs only
 * and never imports this). A file is read twice by an upload, streaming to
 * hash it and one piece at a time to send it, so a source hands out any byte
 * range: each call opens the file, seeks and reads, so concurrent ranges
 * never share a file position. If the file changes in between, the hash pass
 * notices a size change and the server a content change (the PieceCIDv2 no
 * longer matches: 400 cid_mismatch).
 *
 * @example
 * const source = await fileSource("video.mp4");
 * await client.upload(source, { filename: source.name });
 */
import type { ByteSource } from "./types.ts";

/** Bytes read per chunk when a range is streamed to a default reader. */
const READ_CHUNK_BYTES = 1024 * 1024;

export interface FileSource extends ByteSource {
  readonly path: string;
  /** The file's base name, which upload() uses as the file name unless told otherwise. */
  readonly name: string;
}

export async function fileSource(path: string | URL): Promise<FileSource> {
  const filePath = path instanceof URL ? decodeURIComponent(path.pathname) : path;
  const info = await Deno.stat(filePath);
  if (!info.isFile) throw new Error(`Cannot upload ${filePath}: not a regular file`);
  const size = info.size;
  return {
    path: filePath,
    name: filePath.split(/[\\/]/).filter((part) => part !== "").pop() ?? filePath,
    size,
    stream: (start, end) => rangeStream(filePath, checked(start, end, size)),
    bytes: (start, end) => readRange(filePath, checked(start, end, size)),
  };
}

function checked(start: number, end: number, size: number): { start: number; end: number } {
  if (!(0 <= start && start <= end && end <= size)) {
    throw new RangeError(`Range [${start}, ${end}) is outside a file of ${size} bytes`);
  }
  return { start, end };
}

/**
 * A byte stream of the range: a reader that brings its own buffer (the SDK's
 * hashing pass) has the file read straight into it, so a large file does not
 * become a trail of garbage chunks; a default reader gets 1 MiB chunks.
 */
function rangeStream(path: string, range: { start: number; end: number }) {
  let file: Deno.FsFile | null = null;
  let offset = range.start;
  const closeFile = () => {
    file?.close();
    file = null;
  };
  return new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: READ_CHUNK_BYTES,
    start(controller) {
      if (range.start >= range.end) controller.close();
    },
    async pull(controller) {
      // With autoAllocateChunkSize every pull has a request, whichever reader is used.
      const request = controller.byobRequest!;
      const view = request.view as Uint8Array;
      try {
        if (file === null) {
          file = await Deno.open(path, { read: true });
          await file.seek(range.start, Deno.SeekMode.Start);
        }
        const want = Math.min(view.byteLength, range.end - offset);
        const read = await file.read(view.subarray(0, want));
        if (read === null) throw shrank(path, offset);
        offset += read;
        request.respond(read);
        if (offset >= range.end) {
          closeFile();
          controller.close();
        }
      } catch (error) {
        closeFile();
        controller.error(error);
      }
    },
    cancel: closeFile,
  });
}

async function readRange(
  path: string,
  range: { start: number; end: number },
): Promise<Uint8Array<ArrayBuffer>> {
  using file = await Deno.open(path, { read: true });
  await file.seek(range.start, Deno.SeekMode.Start);
  const out = new Uint8Array(range.end - range.start);
  let filled = 0;
  while (filled < out.byteLength) {
    const read = await file.read(out.subarray(filled));
    if (read === null) throw shrank(path, range.start + filled);
    filled += read;
  }
  return out;
}

function shrank(path: string, offset: number): Error {
  return new Error(`${path} ended at ${offset} bytes: it changed while being uploaded`);
}
