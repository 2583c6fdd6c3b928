/**
 * A byte range of an open file as a stream: the file is read from its
 * current position, exactly `length` bytes, and closed when the range is
 * done, fails or is cancelled. Reads are sized to what is left of the range
 * (at most READ_BYTES), so a 64 KiB range costs one 64 KiB read, not a whole
 * buffer past it. A file that ends before the range does fails the stream: a
 * reader never takes a short answer for a whole one. Every range read in
 * JavaScript goes this way: each part of /f/, the blocks a CAR answer walks,
 * and a range whose answer Deno's server would not cut at its Content-Length
 * (HTTP/2); and so do a whole piece and a range sent as an answer, a few at
 * once (disk_store.ts LOOP_READERS; the rest by the runtime's file.readable).
 *
 * Its 1 MiB reads make 16 times fewer trips than the runtime's stream (64 KiB
 * a read): a whole 100 MiB piece went out at 1.3-1.6 times file.readable's
 * throughput for less CPU (bench workload 22, docs/performance.md). Each read
 * needs a fresh buffer (the HTTP server keeps an enqueued chunk as long as it
 * likes and says nothing when it lets go, so none can be reused), memory
 * outside the heap that V8 weighs against its old generation's limit: without
 * the server's V8 flag (scripts/compile.ts V8_FLAGS) the service started a
 * full collection every ~100 MiB sent and the loop lost to file.readable
 * (0.74-0.78 of its throughput); with it, none. And each is a fresh
 * allocation that glibc, left to its defaults, gives back to the system once
 * freed and faults in again for the next: the server's malloc settings
 * (scripts/compile.ts MALLOC_ENV) keep them for reuse, about half the CPU.
 * Dead buffers wait for V8's next young-generation collection; the store's
 * ReadGarbage (read_garbage.ts) asks for one every 16 MiB read.
 */
import type { ReadGarbage } from "./read_garbage.ts";

/**
 * Largest single read. Deno's own file streams read 64 KiB at a time; each read
 * here costs a trip through JavaScript, so larger reads pay it less often: 1 GiB
 * streamed in 1 MiB reads ran faster than file.readable, in 64 KiB reads at
 * about half its speed (same machine, same run).
 */
export const READ_BYTES = 1024 * 1024;

export interface FileRangeHooks {
  /** Called once, when the file is closed (the range done, failed or cancelled). */
  onClose?: () => void;
  /** Told of each fresh buffer (read_garbage.ts collects them early). */
  garbage?: ReadGarbage;
}

export function fileRangeStream(
  file: Deno.FsFile,
  length: number,
  hooks: FileRangeHooks = {},
): ReadableStream<Uint8Array> {
  let left = length;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    file.close();
    hooks.onClose?.();
  };
  return new ReadableStream<Uint8Array>({
    type: "bytes",
    async pull(controller) {
      const buffer = new Uint8Array(Math.min(left, READ_BYTES));
      hooks.garbage?.read(buffer.byteLength);
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
