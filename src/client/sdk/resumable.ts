/**
 * One piece sent through the server's tus endpoint (/api/tus), so a dropped
 * connection costs only what was on the wire: the upload is created, then
 * PATCHed from the offset the server has; after a network error, a 5xx, a
 * 409 or a 423 the client asks HEAD where it stands and goes on from there.
 * The last PATCH's answer names the deal.
 *
 * Bytes are counted as they leave (`onSent`): in Deno a PATCH body is a
 * stream of the source from the offset to the end (sent chunked, counted as
 * the runtime pulls it); where streaming request bodies are not available (a
 * browser's fetch over HTTP/1.1), PATCHes are Blob slices of CHUNK_BYTES and
 * the count moves per slice (the web page meters XHR for finer progress).
 *
 * With a ResumeStore the upload's URL is kept under `resumeKey` until it
 * finishes, so a later run (a reloaded page) continues it instead of
 * starting again; a URL the server no longer knows starts a new upload.
 * Without one, nobody could ever continue an upload this run leaves, so when
 * the run ends without finishing it (Ctrl-C, an abort, a failure) the upload
 * is ended (tus DELETE): its bytes and the quota it holds go at once, rather
 * than after the server's 24 hours.
 */
import { sleep } from "../../kernel/clock.ts";
import { NetworkError, StorageError } from "./errors.ts";
import { retryDelayMs } from "./retry.ts";
import type { UploadableSource } from "./sources.ts";
import type { Transport } from "./transport.ts";
import type { ResumeStore } from "./types.ts";

const TUS = { "tus-resumable": "1.0.0" };
/** PATCH size where bodies cannot be streamed. */
export const CHUNK_BYTES = 8 * 1024 * 1024;

/** A piece of an upload: bytes [start, end) of its source, stored under cid. */
export interface PieceToSend {
  cid: string;
  source: UploadableSource;
  start: number;
  end: number;
  contentType: string;
  filename: string | null;
  signal: AbortSignal;
  /** Bytes of this piece the server has or that are on the wire (it may go back after a drop). */
  onSent(bytes: number): void;
}

export interface ResumablePiece extends PieceToSend {
  store?: ResumeStore;
  /** Where `store` keeps this piece's upload URL. */
  resumeKey?: string;
}

/** Sends the piece; resolves with the deal its last byte made. */
export async function sendResumably(
  transport: Transport,
  piece: ResumablePiece,
): Promise<{ dealId: string }> {
  const size = piece.end - piece.start;
  let url = await storedUrl(piece);
  let offset = url === null ? null : await offsetOf(transport, url, piece.signal);
  if (offset === null) {
    url = await create(transport, piece, size);
    offset = 0;
    if (piece.store && piece.resumeKey) await piece.store.set(piece.resumeKey, url);
  }
  try {
    return await sendFrom(transport, piece, url!, offset);
  } catch (error) {
    if (!(piece.store && piece.resumeKey)) await terminate(transport, url!);
    throw error;
  }
}

/** PATCHes from offset until the last byte's answer names the deal. */
async function sendFrom(
  transport: Transport,
  piece: ResumablePiece,
  url: string,
  offset: number,
): Promise<{ dealId: string }> {
  piece.onSent(offset);
  for (let failures = 0;;) {
    try {
      const answer = await patch(transport, url, offset, piece);
      const dealId = answer.headers.get("x-storage-deal-id");
      offset = Number(answer.headers.get("upload-offset"));
      piece.onSent(offset);
      if (dealId !== null) {
        if (piece.store && piece.resumeKey) await piece.store.delete(piece.resumeKey);
        return { dealId };
      }
      failures = 0;
    } catch (error) {
      piece.signal.throwIfAborted();
      const delay = retryDelayMs(retryableAs(error), ++failures, transport.policy, "safe");
      if (delay === null) throw error;
      await sleep(delay, piece.signal);
      const now = await offsetOf(transport, url, piece.signal);
      if (now === null) throw error; // the upload is gone (expired, ended): give up on it
      offset = now;
      piece.onSent(offset);
    }
  }
}

/** How long ending an abandoned upload may take: the caller is leaving. */
const TERMINATE_TIMEOUT_MS = 5_000;

/**
 * DELETE of an upload this run leaves unfinished and nobody will continue:
 * the server drops its bytes and gives back the quota it holds. Best effort
 * (the caller is already failing or interrupted), on its own short deadline
 * since the caller's signal may be the reason for leaving.
 */
async function terminate(transport: Transport, url: string): Promise<void> {
  const headers = tusHeaders(transport);
  try {
    const answer = await transport.request(url, {
      method: "DELETE",
      headers,
      acceptStatus: [404, 410],
    }, AbortSignal.timeout(TERMINATE_TIMEOUT_MS));
    await answer.body?.cancel();
  } catch {
    // The server is unreachable or busy: the upload expires there by itself.
  }
}

/** POST /api/tus: a new upload of `size` bytes; its URL. */
async function create(transport: Transport, piece: ResumablePiece, size: number): Promise<string> {
  const headers = tusHeaders(transport);
  headers.set("upload-length", String(size));
  headers.set("upload-metadata", metadataOf(piece));
  const endpoint = transport.url("/api/tus");
  // Not repeated after a lost answer: a second creation would hold a second reservation.
  const answer = await transport.retrying(
    "only-if-not-done",
    piece.signal,
    () => transport.request(endpoint, { method: "POST", headers }, piece.signal),
  );
  await answer.body?.cancel();
  const location = answer.headers.get("location");
  if (location === null) {
    throw new StorageError(answer.status, "invalid_response", `${endpoint} answered no Location`);
  }
  return new URL(location, endpoint).href;
}

/** One PATCH from offset: the rest of the piece streamed, or the next slice. */
async function patch(
  transport: Transport,
  url: string,
  offset: number,
  piece: ResumablePiece,
): Promise<Response> {
  const headers = tusHeaders(transport);
  headers.set("content-type", "application/offset+octet-stream");
  headers.set("upload-offset", String(offset));
  const from = piece.start + offset;
  let body: BodyInit;
  if (streamsRequestBodies()) {
    let sent = offset;
    body = piece.source.stream(from, piece.end).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          controller.enqueue(chunk);
          sent += chunk.byteLength;
          piece.onSent(sent);
        },
      }),
    );
  } else {
    body = await piece.source.body(from, Math.min(piece.end, from + CHUNK_BYTES));
  }
  const answer = await transport.request(
    url,
    { method: "PATCH", headers, body, duplex: "half" } as RequestInit,
    piece.signal,
  );
  await answer.body?.cancel();
  return answer;
}

/** HEAD of the upload: its offset, or null when the server does not know it (any 4xx). */
async function offsetOf(
  transport: Transport,
  url: string,
  signal: AbortSignal,
): Promise<number | null> {
  const headers = tusHeaders(transport);
  const answer = await transport.retrying("safe", signal, async () => {
    const response = await transport.request(url, {
      method: "HEAD",
      headers,
      acceptStatus: [403, 404, 410],
    }, signal);
    await response.body?.cancel();
    return response;
  });
  if (!answer.ok) return null;
  return Number(answer.headers.get("upload-offset"));
}

async function storedUrl(piece: ResumablePiece): Promise<string | null> {
  if (!piece.store || !piece.resumeKey) return null;
  return await piece.store.get(piece.resumeKey) ?? null;
}

/** The token (if any) and Tus-Resumable, for every request of the protocol. */
function tusHeaders(transport: Transport): Headers {
  const headers = transport.headers(true);
  for (const [name, value] of Object.entries(TUS)) headers.set(name, value);
  return headers;
}

/** Upload-Metadata: cid, filetype and (when there is one) filename, each base64. */
function metadataOf(piece: ResumablePiece): string {
  const encode = (text: string) => new TextEncoder().encode(text).toBase64();
  const pairs = [`cid ${encode(piece.cid)}`, `filetype ${encode(piece.contentType)}`];
  if (piece.filename !== null) pairs.push(`filename ${encode(piece.filename)}`);
  return pairs.join(",");
}

/**
 * Failures worth going on from the server's offset: a lost connection, 5xx,
 * and the tus answers that mean "not from there" (409) or "not yet" (423).
 */
function retryableAs(error: unknown): unknown {
  if (error instanceof StorageError && (error.status === 409 || error.status === 423)) {
    return new NetworkError(error.message, { cause: error });
  }
  return error;
}

/** Deno's fetch sends a stream body chunked; a browser's needs HTTP/2 for it, so slices there. */
function streamsRequestBodies(): boolean {
  return "Deno" in globalThis;
}
