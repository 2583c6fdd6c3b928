/**
 * The body of GET /f/{cid} for a manifest: the bytes of a range of the whole
 * file, read piece after piece. Only the pieces the range touches are opened,
 * each from the offset the range needs within it, and at most two at a time
 * (the one being sent and the next, opened ahead); memory stays at a read
 * buffer or two whatever the file's size.
 *
 * A piece that cannot be served when its turn comes (its row gone, marked
 * corrupt, missing from the store, or delivering more or fewer bytes than the
 * manifest lists) ends the body with an error, which cuts the answer off:
 * the client sees a broken transfer, never a short or wrong file that looks
 * whole. The first piece is opened before the answer's head is sent, so a
 * file whose first piece is unavailable gets an error status instead. Each
 * next piece is opened while the last OPEN_AHEAD_BYTES of the one before are
 * sent, so a bucket's first-byte wait is hidden instead of paid per piece;
 * a client that goes away cancels it too.
 */
import type { Manifest } from "../../kernel/manifest_format.ts";
import type { ByteRange } from "../../driver/driver.ts";
import { findServablePiece, mustExist } from "./stored_piece.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

/** One piece's share of a range of the file. */
export interface PiecePart {
  cid: string;
  /** The size the manifest lists for the piece. */
  size: number;
  /** The bytes of the piece that belong to the range. */
  range: ByteRange;
}

/** The parts of the pieces that a range of the whole file covers, in order. */
export function partsOf(manifest: Manifest, range: ByteRange): PiecePart[] {
  const end = range.offset + range.length;
  const parts: PiecePart[] = [];
  let start = 0;
  for (const piece of manifest.pieces) {
    const pieceEnd = start + piece.size;
    if (pieceEnd > range.offset && start < end) {
      const offset = Math.max(range.offset, start) - start;
      const length = Math.min(end, pieceEnd) - start - offset;
      parts.push({ cid: piece.cid, size: piece.size, range: { offset, length } });
    }
    if (pieceEnd >= end) break;
    start = pieceEnd;
  }
  return parts;
}

/** A part's bytes: the piece must still be servable and hold the size the manifest lists. */
export async function openPart(
  deps: RetrievalDeps,
  part: PiecePart,
): Promise<ReadableStream<Uint8Array>> {
  const piece = await findServablePiece(deps, part.cid);
  if (piece.size !== part.size) {
    throw new Error(`Piece ${part.cid} has ${piece.size} bytes, the manifest lists ${part.size}`);
  }
  // Always a range, whole pieces too: the driver then reads in its own (larger) steps, which
  // keeps a split file's stream as fast as one piece's (bench workload 13).
  const opened = await mustExist(deps, part.cid, () => deps.store.open(part.cid, part.range));
  if (opened.size !== part.size) {
    await opened.body.cancel();
    throw new Error(
      `Piece ${part.cid} has ${opened.size} bytes stored, the manifest lists ${part.size}`,
    );
  }
  return opened.body;
}

export interface FileStreamOptions {
  deps: RetrievalDeps;
  parts: PiecePart[];
  /** The first part, opened already (before the answer's head). */
  first: ReadableStream<Uint8Array>;
  /** Told (once) why the body was cut off. */
  onAbort: (error: unknown, part: PiecePart) => void;
}

/**
 * How close to the end of a part the next one is opened: its catalog check
 * and its store request run while these last bytes are sent, so a bucket's
 * first-byte wait is not paid once per piece. Opened no earlier, so a slow
 * client does not hold an idle answer from the bucket for long.
 */
export const OPEN_AHEAD_BYTES = 8 * 1024 * 1024;

/** The parts' bytes as one stream, each part checked to deliver exactly its length. */
export function fileStream(options: FileStreamOptions): ReadableStream<Uint8Array> {
  const { deps, parts } = options;
  let index = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = options.first.getReader();
  let left = parts[0].range.length;
  // The next part, opened ahead (OPEN_AHEAD_BYTES); its failure counts only when its turn comes.
  let next: Promise<ReadableStream<Uint8Array>> | null = null;
  const openAhead = () => {
    if (next !== null || index + 1 >= parts.length || left > OPEN_AHEAD_BYTES) return;
    next = openPart(deps, parts[index + 1]);
    next.catch(() => {});
  };
  const dropAhead = async (reason?: unknown) => {
    const pending = next;
    next = null;
    await pending?.then((body) => body.cancel(reason)).catch(() => {});
  };
  const blocks = new Blocks();
  const fail = (error: unknown) => {
    options.onAbort(error, parts[index]);
    return error;
  };
  openAhead();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          if (reader === null) {
            if (++index >= parts.length) {
              const rest = blocks.flush();
              if (rest) controller.enqueue(rest);
              return controller.close();
            }
            const opening = next ?? openPart(deps, parts[index]);
            next = null;
            reader = (await opening).getReader();
            left = parts[index].range.length;
            openAhead();
          }
          const { done, value } = await reader.read();
          if (done) {
            if (left !== 0) throw new Error(`Piece ${parts[index].cid} ended ${left} bytes early`);
            reader = null;
            continue;
          }
          if (value.byteLength > left) {
            throw new Error(`Piece ${parts[index].cid} has more bytes than the manifest lists`);
          }
          left -= value.byteLength;
          openAhead();
          const ready = blocks.add(value);
          for (const block of ready) controller.enqueue(block);
          if (ready.length > 0) return;
        }
      } catch (error) {
        await reader?.cancel().catch(() => {});
        reader = null;
        await dropAhead();
        throw fail(error);
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
      await dropAhead(reason);
    },
  });
}

/** Chunks at least this large are sent as they come. */
const SMALL_CHUNK_BYTES = 256 * 1024;
/** Smaller ones are gathered into blocks of this size. */
const BLOCK_BYTES = 1024 * 1024;

/**
 * Gathers small chunks into 1 MiB blocks. Every chunk sent costs a trip
 * through JavaScript into the HTTP server; a bucket's answer arrives in
 * chunks of some 60 KiB (a file's, in the disk driver's 1 MiB reads), so
 * gathering them sends a split file from S3 in a sixteenth of the writes,
 * for one copy of its bytes in memory.
 */
class Blocks {
  #block: Uint8Array | null = null;
  #filled = 0;

  /** What is ready to send once `chunk` is added: nothing, a block, or chunks as they came. */
  add(chunk: Uint8Array): Uint8Array[] {
    if (chunk.byteLength >= SMALL_CHUNK_BYTES) {
      const pending = this.flush();
      return pending ? [pending, chunk] : [chunk];
    }
    const ready: Uint8Array[] = [];
    let from = 0;
    while (from < chunk.byteLength) {
      this.#block ??= new Uint8Array(BLOCK_BYTES);
      const take = Math.min(chunk.byteLength - from, BLOCK_BYTES - this.#filled);
      this.#block.set(chunk.subarray(from, from + take), this.#filled);
      this.#filled += take;
      from += take;
      if (this.#filled === BLOCK_BYTES) ready.push(this.flush()!);
    }
    return ready;
  }

  /** The bytes gathered so far, if any. */
  flush(): Uint8Array | null {
    if (this.#block === null || this.#filled === 0) return null;
    const block = this.#block.subarray(0, this.#filled);
    this.#block = null;
    this.#filled = 0;
    return block;
  }
}
