/**
 * A byte range of an open file as a stream: the file is read from its
 * current position, exactly `length` bytes, and closed when the range is
 * done, fails or is cancelled. Reads are sized to what is left of the range
 * (at most READ_BYTES), so a 64 KiB range costs one 64 KiB read, not a whole
 * buffer past it. A file that ends before the range does fails the stream: a
 * reader never takes a short answer for a whole one. Every range read in
 * JavaScript goes this way: each part of /f/, the blocks a CAR answer walks,
 * and a range whose answer Deno's server would not cut at its Content-Length
 * (HTTP/2).
 *
 * A whole piece, and a range sent straight as an HTTP/1.1 answer, do not: they
 * go out by the runtime's own file.readable, whose bytes never enter
 * JavaScript (the server cuts a range's at its Content-Length; driver.ts
 * OpenOptions). What this loop costs is its buffers more than its JavaScript:
 * each read needs a fresh 1 MiB buffer (the HTTP server keeps an enqueued
 * chunk as long as it likes and says nothing when it lets go, so none can be
 * reused), left to the garbage collector, whose work on them grows with the
 * service's heap. Measured (bench workload 22, docs/performance.md): on a
 * bare Deno.serve the loop reusing its buffers took 0.44-0.46 CPU s/GiB,
 * allocating them 0.74-0.83 (0.44 with glibc told to keep freed memory); in
 * the service the same loop took 0.87-1.25 against 0.39-0.68 bare, and whole
 * pieces on it lost to file.readable (0.74-0.78 of its throughput). The
 * runtime's own stream pays for no buffer of ours.
 */

/**
 * Largest single read. Deno's own file streams read 64 KiB at a time; each read
 * here costs a trip through JavaScript, so larger reads pay it less often: 1 GiB
 * streamed in 1 MiB reads ran faster than file.readable, in 64 KiB reads at
 * about half its speed (same machine, same run).
 */
export const READ_BYTES = 1024 * 1024;

export function fileRangeStream(file: Deno.FsFile, length: number): ReadableStream<Uint8Array> {
  let left = length;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
  };
  return new ReadableStream<Uint8Array>({
    type: "bytes",
    async pull(controller) {
      const buffer = new Uint8Array(Math.min(left, READ_BYTES));
      let read: number | null;
      try {
        read = await file.read(buffer);
      } catch (error) {
        close();
        throw error;
      }
      if (read === null || read === 0) {
        close();
        throw new Error(`The file ended ${left} bytes before the range did`);
      }
      left -= read;
      controller.enqueue(buffer.subarray(0, read));
      if (left === 0) {
        close();
        controller.close();
      }
    },
    cancel: close,
  });
}
