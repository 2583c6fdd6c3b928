/**
 * Downloads as a stream of the original bytes, checked while they stream.
 *
 * GET /p/{cid}. A manifest (Content-Type MANIFEST_CONTENT_TYPE) is read
 * whole, checked against its own cid, parsed, and then followed: each piece
 * is fetched in turn and checked against its cid, and the whole against the
 * manifest's SHA-256. Anything else is streamed and checked against its cid
 * when the cid is verifiable (content_check.ts); opaque cids pass through.
 *
 * What a consumer may have received before a VerificationError: every chunk
 * is released only once the next one has arrived, and a piece's last chunk
 * only once the piece matched its cid (and, for the last piece of a split
 * file, once the whole matched the manifest's SHA-256). So on error the
 * consumer holds at most the failing piece's bytes minus its last chunk,
 * after the bytes of the pieces before it, which did match. The complete
 * piece is never released unverified; a consumer that writes to a file
 * discards it on error (or writes to a temporary name and renames on success).
 *
 * Resuming (resume.ts): every body read here resumes where it broke off when
 * the connection drops (or it ends before its length), with a ranged GET from
 * the first byte not yet received, so the checks go on where they were and a
 * big file is never fetched again from its start.
 */
import type { DownloadInfo, DownloadOptions, DownloadProgress, Manifest } from "./types.ts";
import { NetworkError, VerificationError } from "./errors.ts";
import { contentCheckFor } from "./content_check.ts";
import type { ContentCheck, ContentCheckOptions } from "./content_check.ts";
import { MANIFEST_PREFIX, MAX_MANIFEST_BYTES, parseManifest } from "./manifest.ts";
import { parseCid } from "../../kernel/piece_cid/mod.ts";
import { readChunks } from "./piece_cid.ts";
import { toHex } from "./sha256.ts";
import type { Transport } from "./transport.ts";
import { resumable } from "./resume.ts";

export interface DownloadContext extends ContentCheckOptions {
  transport: Transport;
}

export async function download(
  context: DownloadContext,
  cid: string,
  options: DownloadOptions = {},
): Promise<ReadableStream<Uint8Array>> {
  const cancelled = new AbortController();
  const signal = options.signal
    ? AbortSignal.any([options.signal, cancelled.signal])
    : cancelled.signal;
  const opened = await openPiece(context, cid, signal, options.followManifest !== false);
  let chunks: AsyncGenerator<Uint8Array, void, undefined>;
  if (opened.manifest) {
    chunks = manifestChunks(context, cid, opened.manifest, signal, options.onProgress);
  } else {
    const { response } = opened;
    const size = contentLengthOf(response);
    const progress = new ProgressReport(options.onProgress, size, 1);
    chunks = pieceChunks({
      cid,
      body: response.body!,
      check: contentCheckFor(cid, context),
      size,
      signal,
      onChunk: (chunk) => progress.received(chunk.byteLength),
      onPieceDone: () => progress.pieceDone(),
    });
  }
  return streamOf(chunks, cancelled);
}

/** Size, name and type of what download() would give, without downloading it. */
export async function downloadInfo(
  context: DownloadContext,
  cid: string,
  options: { signal?: AbortSignal } = {},
): Promise<DownloadInfo> {
  const opened = await openPiece(context, cid, options.signal, true);
  const head = opened.response;
  await head?.body?.cancel();
  const manifest = opened.manifest;
  if (manifest) {
    return {
      cid,
      size: manifest.size,
      name: manifest.name,
      contentType: manifest.contentType,
      manifest,
      verified: true,
    };
  }
  return {
    cid,
    size: contentLengthOf(head!) ?? 0,
    name: filenameOf(head!.headers.get("content-disposition")),
    contentType: head!.headers.get("content-type") ?? "application/octet-stream",
    manifest: null,
    verified: contentCheckFor(cid, context) !== null,
  };
}

type OpenedPiece =
  | { manifest: Manifest; response: null }
  | { manifest: null; response: Response };

/**
 * GETs a cid and tells a manifest from a file by its first bytes (see
 * MANIFEST_PREFIX), and only under a PieceCIDv2, whose bytes are checked:
 * a manifest's pieces are then checked one by one, so the whole chain is
 * verified. Anything else is the file itself, its first bytes put back.
 */
async function openPiece(
  context: DownloadContext,
  cid: string,
  signal: AbortSignal | undefined,
  followManifest: boolean,
): Promise<OpenedPiece> {
  const fetched = await context.transport.getPiece(cid, signal);
  const response = resumingResponse(context, cid, fetched, signal);
  if (!followManifest || parseCid(cid.toLowerCase()).kind !== "piece_v2" || !response.body) {
    return { manifest: null, response };
  }
  const reader = response.body.getReader();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let done = false;
  while (headBytes < MANIFEST_PREFIX.byteLength && !done) {
    const read = await reader.read();
    if (read.done) done = true;
    else {
      head.push(read.value);
      headBytes += read.value.byteLength;
    }
  }
  const replayed = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of head) controller.enqueue(chunk);
      if (done) controller.close();
    },
    async pull(controller) {
      const read = await reader.read();
      if (read.done) controller.close();
      else controller.enqueue(read.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  const again = new Response(replayed, { status: response.status, headers: response.headers });
  if (!startsWith(head, MANIFEST_PREFIX)) return { manifest: null, response: again };
  return { manifest: await readManifest(context, cid, again, signal), response: null };
}

/** Whether the chunks, joined, begin with prefix. */
function startsWith(chunks: Uint8Array[], prefix: Uint8Array): boolean {
  let at = 0;
  for (const chunk of chunks) {
    for (let i = 0; i < chunk.byteLength && at < prefix.byteLength; i++, at++) {
      if (chunk[i] !== prefix[at]) return false;
    }
  }
  return at === prefix.byteLength;
}

/** Reads a manifest piece whole (it is small), checks it against its cid, and parses it. */
async function readManifest(
  context: DownloadContext,
  cid: string,
  response: Response,
  signal?: AbortSignal,
): Promise<Manifest> {
  const declared = contentLengthOf(response);
  if (declared !== null && declared > MAX_MANIFEST_BYTES) {
    await response.body?.cancel();
    throw new VerificationError(cid, "manifest", `The manifest ${cid} is ${declared} bytes`);
  }
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (
    const chunk of pieceChunks({
      cid,
      body: response.body!,
      check: contentCheckFor(cid, context),
      size: declared,
      signal,
    })
  ) {
    total += chunk.byteLength;
    if (total > MAX_MANIFEST_BYTES) {
      throw new VerificationError(cid, "manifest", `The manifest ${cid} is over ${total} bytes`);
    }
    parts.push(chunk);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return parseManifest(bytes, cid);
}

async function* manifestChunks(
  context: DownloadContext,
  manifestCid: string,
  manifest: Manifest,
  signal: AbortSignal,
  onProgress: DownloadOptions["onProgress"],
): AsyncGenerator<Uint8Array, void, undefined> {
  const whole = context.sha256();
  const progress = new ProgressReport(onProgress, manifest.size, manifest.pieces.length);
  const last = manifest.pieces.length - 1;
  for (const [index, piece] of manifest.pieces.entries()) {
    // A listed piece is served as bytes whatever it contains: manifests do not nest.
    const fetched = await context.transport.getPiece(piece.cid, signal);
    yield* pieceChunks({
      cid: piece.cid,
      body: resumable(fetched.body!, {
        transport: context.transport,
        cid: piece.cid,
        size: piece.size,
        signal,
      }),
      check: contentCheckFor(piece.cid, context),
      size: piece.size,
      signal,
      onChunk: (chunk) => {
        whole.update(chunk);
        progress.received(chunk.byteLength);
      },
      onPieceDone: () => progress.pieceDone(),
      beforeLastChunk: index !== last ? undefined : () => {
        const sha256 = toHex(whole.digest());
        if (sha256 !== manifest.sha256) {
          throw new VerificationError(
            manifestCid,
            "sha256",
            `The pieces of ${manifestCid} hash to SHA-256 ${sha256}, not ${manifest.sha256}`,
          );
        }
      },
    });
  }
}

interface PieceRead {
  cid: string;
  body: ReadableStream<Uint8Array>;
  check: ContentCheck | null;
  /** Bytes the piece must have (manifest entry, Content-Length); null when unknown. */
  size: number | null;
  signal?: AbortSignal;
  onChunk?: (chunk: Uint8Array) => void;
  onPieceDone?: () => void;
  /** Last word before the piece's final chunk is released (the whole-file check). */
  beforeLastChunk?: () => void;
}

/** One piece's chunks, each released when the next arrives; the last only once checked. */
async function* pieceChunks(read: PieceRead): AsyncGenerator<Uint8Array, void, undefined> {
  const { cid, check } = read;
  const expected = check?.fixedSize ?? read.size;
  if (check?.fixedSize != null && read.size !== null && read.size !== check.fixedSize) {
    await read.body.cancel();
    throw sizeError(cid, read.size, check.fixedSize);
  }
  let held: Uint8Array | null = null;
  let received = 0;
  try {
    for await (const chunk of readChunks(read.body, read.signal)) {
      received += chunk.byteLength;
      if (expected !== null && received > expected) throw sizeError(cid, received, expected);
      const wait = check?.update(chunk);
      if (wait) await wait;
      read.onChunk?.(chunk);
      if (held) yield held;
      held = chunk;
    }
  } catch (error) {
    if (error instanceof TypeError) {
      throw new NetworkError(`Reading ${cid} failed after ${received} bytes: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
  if (expected !== null && received !== expected) throw sizeError(cid, received, expected);
  await check?.finish();
  read.beforeLastChunk?.();
  read.onPieceDone?.();
  if (held) yield held;
}

function sizeError(cid: string, received: number, expected: number): VerificationError {
  return new VerificationError(cid, "size", `${cid} gave ${received} bytes, expected ${expected}`);
}

class ProgressReport {
  readonly #listener: ((progress: DownloadProgress) => void) | undefined;
  readonly #progress: DownloadProgress;

  constructor(
    listener: ((progress: DownloadProgress) => void) | undefined,
    totalBytes: number | null,
    piecesTotal: number,
  ) {
    this.#listener = listener;
    this.#progress = { totalBytes, bytesReceived: 0, piecesDone: 0, piecesTotal };
  }

  received(bytes: number): void {
    this.#progress.bytesReceived += bytes;
    this.#listener?.({ ...this.#progress });
  }

  pieceDone(): void {
    this.#progress.piecesDone++;
    this.#listener?.({ ...this.#progress });
  }
}

/** A pull stream over the chunks; cancelling it aborts the fetch and the checks under it. */
function streamOf(
  chunks: AsyncGenerator<Uint8Array, void, undefined>,
  cancelled: AbortController,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel(reason) {
      cancelled.abort(reason);
      await chunks.return(undefined).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/** The response with a body that resumes where it breaks off (resume.ts); HEAD-less as it was. */
function resumingResponse(
  context: DownloadContext,
  cid: string,
  response: Response,
  signal: AbortSignal | undefined,
): Response {
  if (!response.body) return response;
  const body = resumable(response.body, {
    transport: context.transport,
    cid,
    size: contentLengthOf(response),
    signal,
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

function contentLengthOf(response: Response): number | null {
  const value = response.headers.get("content-length");
  return value !== null && /^\d+$/.test(value) ? Number(value) : null;
}

/** The stored file name from Content-Disposition (filename* first, RFC 8187). */
export function filenameOf(disposition: string | null): string | null {
  if (disposition === null) return null;
  const extended = /filename\*\s*=\s*UTF-8''([^;\s]+)/i.exec(disposition);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]);
    } catch {
      // fall through to the plain form
    }
  }
  const plain = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(disposition);
  return plain ? plain[1].replace(/\\(.)/g, "$1") : null;
}
