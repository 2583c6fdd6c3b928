/**
 * A piece's body that resumes where it broke off. When the connection drops
 * mid-body (fetch's TypeError), or the body ends before its known length, the
 * rest is asked for from the first byte not yet delivered (`Range: bytes=<n>-`
 * with `If-Range`, transport.ts), and the stream goes on as if nothing had
 * happened: whoever reads it (the checks, the file being written) sees every
 * byte once, in order. A server that ignores ranges answers the whole piece
 * again; its first n bytes are skipped.
 *
 * Tries are bounded by the retry policy's attempts, counted in a row at the
 * same byte: a break after progress starts the count again, so a long
 * download over a flaky link goes on, and a link that delivers nothing gives
 * up (NetworkError).
 */
import { NetworkError } from "./errors.ts";
import type { Transport } from "./transport.ts";

export interface ResumeOptions {
  transport: Transport;
  cid: string;
  /** Bytes the body must have; null when not known (then only a dropped connection resumes). */
  size: number | null;
  signal?: AbortSignal;
}

export function resumable(
  body: ReadableStream<Uint8Array>,
  options: ResumeOptions,
): ReadableStream<Uint8Array> {
  const { transport, cid, size, signal } = options;
  let reader = body.getReader();
  let delivered = 0;
  let breakAt = -1;
  let breaksInARow = 0;
  const resume = async (cause: unknown) => {
    breaksInARow = delivered === breakAt ? breaksInARow + 1 : 1;
    breakAt = delivered;
    if (breaksInARow > transport.policy.attempts) {
      const why = cause instanceof Error ? cause.message : "the body ended early";
      throw new NetworkError(`Reading ${cid} failed after ${delivered} bytes: ${why}`, { cause });
    }
    reader.releaseLock();
    const { response, ranged } = await transport.getPieceFrom(cid, delivered, signal);
    reader = (ranged ? response.body! : skipped(response.body!, delivered)).getReader();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch (error) {
          signal?.throwIfAborted();
          if (!(error instanceof TypeError)) throw error;
          await resume(error);
          continue;
        }
        if (read.done) {
          if (size !== null && delivered < size) {
            await resume(null);
            continue;
          }
          return controller.close();
        }
        delivered += read.value.byteLength;
        return controller.enqueue(read.value);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/** The stream without its first `bytes` bytes (a whole answer where a range was asked for). */
function skipped(body: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  let left = bytes;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (left >= chunk.byteLength) {
          left -= chunk.byteLength;
          return;
        }
        controller.enqueue(chunk.subarray(left));
        left = 0;
      },
    }),
  );
}
