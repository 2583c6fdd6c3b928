/**
 * Moves an upload's body into a driver's sink: the part of `stage` that every
 * driver shares. It enforces the declared length (more is "long_body", less
 * "short_body"), gives up on a silent body ("stalled") or one slower than
 * the minimum rate ("too_slow"), stops on abort,
 * hashes SHA-256 when asked, and lets `onChunk` (cid verification) see every
 * chunk. With two reader buffers, chunk N is written by the sink while chunk
 * N+1 is read; writes stay in order.
 */
import { createHash } from "node:crypto";
import { createChunkReader } from "../kernel/streams/chunk_reader.ts";
import type { ChunkReader } from "../kernel/streams/chunk_reader.ts";
import { StoreError } from "./driver.ts";
import type { StageOptions } from "./driver.ts";
import { describeVerdict, ReadWatchdog } from "../kernel/streams/read_watchdog.ts";

export interface PumpedBody {
  size: number;
  /** Lowercase hex, when StageOptions.computeSha256 is not false. */
  sha256: string | null;
  /** With keepCutBody: why the body ended before expectedBytes (null when it did not). */
  cut: StoreError | null;
}

export interface PumpOptions extends StageOptions {
  /**
   * A body that ends early (cut, stalled, aborted, or simply shorter) is not a
   * failure: every byte read was written, and `cut` says why it ended
   * (resumable uploads keep what arrived). Default false: it throws.
   */
  keepCutBody?: boolean;
}

/**
 * Reads body to its end into write(chunk). The chunk's memory is reused two
 * reads later, so write must be done with it when its promise settles.
 */
export async function pumpBody(
  body: ReadableStream<Uint8Array>,
  options: PumpOptions,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<PumpedBody> {
  const reader = createChunkReader(body, { expectedBytes: options.expectedBytes, buffers: 2 });
  const stopReading = (reason: unknown) => reader.cancel(reason).catch(() => {});
  const onAbort = () => stopReading(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  // Cancelling the reader ends its pending read, so readNext sees the stall.
  const watchdog = options.idleTimeoutMs === undefined ? null : new ReadWatchdog(
    { idleMs: options.idleTimeoutMs, minRate: options.minRate },
    (verdict) => stopReading(new Error(verdict)),
  );
  const hash = options.computeSha256 === false ? null : createHash("sha256");
  let size = 0;
  let writing: Promise<void> | null = null;
  let cut: StoreError | null = null;
  try {
    if (options.signal?.aborted) {
      throw new StoreError("short_body", "Cannot store upload: it was aborted");
    }
    for (let chunk; (chunk = await readCut(reader, watchdog, options, (e) => cut = e)) !== null;) {
      size += chunk.byteLength;
      watchdog?.received(chunk.byteLength);
      if (size > options.expectedBytes) {
        throw new StoreError("long_body", "Cannot store upload: more bytes than declared");
      }
      // Each write starts once the previous one is done; the same bytes are then hashed
      // and inspected while this write is in flight.
      if (writing) await writing;
      writing = write(chunk);
      // Observed now so a failure while we read on is never "unhandled"; awaited above or below.
      writing.catch(() => {});
      hash?.update(chunk);
      const inspected = options.onChunk?.(chunk);
      if (inspected) await inspected;
    }
    if (writing) await writing;
  } finally {
    // Never leave a write in flight behind us (a failure of it was thrown already).
    await writing?.catch(() => {});
    watchdog?.stop();
    options.signal?.removeEventListener("abort", onAbort);
    reader.release();
  }
  if (size !== options.expectedBytes) {
    const short = new StoreError(
      "short_body",
      `Cannot store upload: got ${size} of ${options.expectedBytes} bytes`,
    );
    if (!options.keepCutBody) throw short;
    cut ??= short;
  }
  return { size, sha256: hash?.digest("hex") ?? null, cut };
}

/** readNext, but with keepCutBody a body that fails ends the loop (null) and is noted. */
async function readCut(
  reader: ChunkReader,
  watchdog: ReadWatchdog | null,
  options: PumpOptions,
  noteCut: (error: StoreError) => void,
): Promise<Uint8Array | null> {
  if (!options.keepCutBody) return await readNext(reader, watchdog);
  try {
    return await readNext(reader, watchdog);
  } catch (error) {
    noteCut(error as StoreError);
    return null;
  }
}

async function readNext(
  reader: ChunkReader,
  watchdog: ReadWatchdog | null,
): Promise<Uint8Array | null> {
  watchdog?.reading(true);
  let chunk: Uint8Array | null;
  try {
    chunk = await reader.next();
  } catch (error) {
    if (watchdog?.fired) throw stalled(watchdog);
    throw new StoreError("short_body", "Cannot read upload: the body ended early", {
      cause: error,
    });
  }
  watchdog?.reading(false);
  if (watchdog?.fired) throw stalled(watchdog);
  return chunk;
}

function stalled(watchdog: ReadWatchdog): StoreError {
  const failure = watchdog.fired === "slow" ? "too_slow" : "stalled";
  return new StoreError(failure, `Cannot read upload: ${describeVerdict(watchdog)}`);
}
