/**
 * `upload --sequential`, the benchmark's baseline (scripts/bench_cli_upload.ts):
 * the same upload doing the same work, with its two phases one after the
 * other instead of overlapped: every piece cid first, then the uploads.
 *
 * It runs the SDK's own upload unchanged over a gated source. The SDK's hash
 * pass reads the file through `stream()`, in order, once; its uploaders read
 * each piece through `bytes()`. The gate holds every `bytes()` until the hash
 * pass has streamed the whole file, so no piece is sent before the last cid is
 * known, and the requests, the manifest and the retries are exactly those of
 * a normal upload. If the hash pass fails or is cancelled, the gate fails too,
 * so no uploader waits forever.
 */
import type { ByteSource } from "../sdk/mod.ts";

export function hashThenUpload<S extends ByteSource>(source: S): S {
  const hashed = Promise.withResolvers<void>();
  hashed.promise.catch(() => {}); // observed by bytes(), if an uploader gets that far
  let streamed = 0;
  const counted = (start: number, end: number): ReadableStream<Uint8Array> => {
    const reader = source.stream(start, end).getReader();
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            controller.close();
            if (streamed >= source.size) hashed.resolve();
            return;
          }
          streamed += value.byteLength;
          controller.enqueue(value);
        } catch (error) {
          hashed.reject(error);
          controller.error(error);
        }
      },
      async cancel(reason) {
        hashed.reject(reason ?? new Error("the hash pass was cancelled"));
        await reader.cancel(reason);
      },
    }, { highWaterMark: 0 });
  };
  if (source.size === 0) hashed.resolve();
  return {
    ...source,
    stream: counted,
    bytes: async (start: number, end: number) => {
      await hashed.promise;
      return await source.bytes(start, end);
    },
  };
}
