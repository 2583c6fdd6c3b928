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
 * 1 MiB reads (a bare Deno.serve on the bench machine: 1.2-1.5x the
 * throughput for these reads; docs/performance.md has the figures).
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

export function fileRangeStream(file: Deno.FsFile, length: number): ReadableStream<Uint8Array> {
  if (length === 0) {
    file.close();
    return new ReadableStream({ type: "bytes", start: (controller) => controller.close() });
  }
  let left = length;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
  };
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
