/** Reading request bodies and their framing headers. */
import { ApiError } from "../../kernel/errors.ts";
import { describeVerdict, ReadWatchdog } from "../../kernel/streams/read_watchdog.ts";
import type { MinBodyRate } from "../../kernel/streams/read_watchdog.ts";
import { stalledBody } from "../../uploads/store_errors.ts";

export const MAX_JSON_BODY_BYTES = 64 * 1024;

/**
 * The declared body length of an upload. Chunked bodies are refused (411):
 * caps are enforced from Content-Length before a byte is read.
 */
export function requireContentLength(headers: Headers): number {
  if (headers.has("transfer-encoding")) {
    throw new ApiError(
      "length_required",
      "Content-Length is required; chunked transfer-encoding is not supported",
    );
  }
  const raw = headers.get("content-length");
  if (raw === null) throw new ApiError("no_body", "Request body is required (send Content-Length)");
  const length = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(length)) {
    throw new ApiError("invalid_request", "Content-Length must be a whole number of bytes");
  }
  if (length === 0) throw new ApiError("empty_bodyy", "Request body is empty (0 bytes)");
  return length;
}

export interface ReadJsonOptions {
  /** Give up (408) when no bytes arrive for this long. */
  idleTimeoutMs: number;
  /** Give up (408) on a body slower than this on average; null: no minimum. */
  minRate?: MinBodyRate | null;
  maxBytes?: number;
}

/**
 * Reads a JSON object body of at most maxBytes. Oversized bodies are refused
 * from their Content-Length when declared, and counted while reading otherwise;
 * a body that stops arriving is a 408 like a stalled upload.
 */
export async function readJsonObject(
  request: Request,
  options: ReadJsonOptions,
): Promise<Record<string, unknown>> {
  const maxBytes = options.maxBytes ?? MAX_JSON_BODY_BYTES;
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {});
    throw new ApiError("too_large", `JSON body exceeds ${maxBytes} bytes`);
  }
  const bytes = await readAtMost(request, maxBytes, options);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError("invalid_json", "Body must be valid UTF-8 JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError("invalid_json", "Body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

async function readAtMost(
  request: Request,
  maxBytes: number,
  options: ReadJsonOptions,
): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const watchdog = new ReadWatchdog(
    { idleMs: options.idleTimeoutMs, minRate: options.minRate },
    (verdict) => reader.cancel(new Error(verdict)).catch(() => {}),
  );
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (true) {
      watchdog.reading(true);
      const { done, value } = await reader.read();
      watchdog.reading(false);
      if (watchdog.fired) throw abandoned(watchdog);
      if (done) break;
      total += value.byteLength;
      watchdog.received(value.byteLength);
      if (total > maxBytes) throw new ApiError("too_large", `JSON body exceeds ${maxBytes} bytes`);
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (watchdog.fired) throw abandoned(watchdog);
    throw new ApiError("incomplete_body", "The body ended before Content-Length bytes arrived");
  } finally {
    watchdog.stop();
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

function abandoned(watchdog: ReadWatchdog): ApiError {
  return stalledBody(undefined, describeVerdict(watchdog));
}
