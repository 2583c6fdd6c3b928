/**
 * The one way the disk driver reads a stored piece: a whole piece and every
 * range alike (GET /p/, /piece/, each part of a split file /f/, an IPFS
 * block, the background digest pass). A byte stream over `length` bytes of
 * an open file from its current position, one read per pull() and no other
 * JavaScript per chunk; the file is closed when the range is done, fails or
 * is cancelled. A file that ends before the range does fails the stream: a
 * reader never takes a short answer for a whole one.
 *
 * Why not the runtime's own file.readable for a whole piece: it reads 64 KiB
 * at a time, and streamed to an HTTP answer it ran slower than this loop's
 * 1 MiB reads (bench workload 22: about 1.3x its throughput, for less CPU per
 * GiB). But every read here leaves its buffer to the garbage collector, while
 * file.readable's bytes never enter JavaScript: 64 clients downloading 100 MiB
 * at once peaked at about 300-430 MiB of RSS by the loop and 110-155 MiB
 * natively. So FileReads lets at most LOOP_STREAMS pieces stream by the loop
 * at once; a whole piece asked for beyond that goes out natively (a range
 * has no native way out). One reader goes as fast as it can; many stay
 * within the memory they took before.
 *
 * Buffers: a reader that brings its own (a BYOB reader: the background pass
 * reads every piece into one reused buffer) is read into directly. Otherwise
 * each read gets a fresh buffer sized to what is left of the range (at most
 * READ_BYTES), so a 64 KiB range costs one 64 KiB read, and a chunk handed to
 * the HTTP server is never written again while the server still sends it.
 */

/**
 * Largest single read. Deno's own file streams read 64 KiB at a time; each read
 * here costs a trip through JavaScript, so larger reads pay it less often: 1 GiB
 * streamed in 1 MiB reads ran faster than file.readable, in 64 KiB reads at
 * about half its speed, and in 4 MiB reads no faster than in 1 MiB (same
 * machine, same run).
 */
export const READ_BYTES = 1024 * 1024;

/** Pieces streamed by the read loop at once, at most; more whole ones go out natively. */
export const LOOP_STREAMS = 8;

/** The disk driver's reads of open piece files, counted so that memory stays bounded. */
export class FileReads {
  #loops = 0;

  /** Streams currently read by the loop (for tests). */
  get loops(): number {
    return this.#loops;
  }

  /**
   * `length` bytes of an open file from `offset` (the whole file when no
   * range is asked for); the file is closed when the stream ends, fails or
   * is cancelled.
   */
  stream(file: Deno.FsFile, offset: number, length: number, whole: boolean) {
    if (whole && this.#loops >= LOOP_STREAMS) return file.readable;
    // lseek on an open file never waits on the disk: done in place, not as an event-loop trip.
    if (offset > 0) file.seekSync(offset, Deno.SeekMode.Start);
    this.#loops++;
    return fileRangeStream(file, length, () => this.#loops--);
  }
}

export function fileRangeStream(
  file: Deno.FsFile,
  length: number,
  onClose: () => void = () => {},
): ReadableStream<Uint8Array> {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
    onClose();
  };
  if (length === 0) {
    close();
    return new ReadableStream({ type: "bytes", start: (controller) => controller.close() });
  }
  let left = length;
  return new ReadableStream({
    type: "bytes",
    async pull(controller) {
      const request = controller.byobRequest;
      const given = request?.view;
      const target = given
        ? new Uint8Array(given.buffer, given.byteOffset, Math.min(given.byteLength, left))
        : new Uint8Array(Math.min(left, READ_BYTES));
      let read: number | null;
      try {
        read = await file.read(target);
      } catch (error) {
        close();
        throw error;
      }
      if (read === null || read === 0) {
        close();
        throw new Error(`The file ended ${left} bytes before the range did`);
      }
      left -= read;
      if (given) request!.respond(read);
      else controller.enqueue(target.subarray(0, read));
      if (left === 0) {
        close();
        controller.close();
      }
    },
    cancel: close,
  });
}
