/**
 * GET and HEAD /p/{cid} — public retrieval, streamed from the store.
 *
 * The straight line: cid format → small-piece cache → the servable piece
 * (stored_piece.ts) → the answer (conditional_answer.ts: 304, ranges;
 * piece_answer.ts: HEAD, the bytes from memory, nginx or the store). Pieces
 * are immutable, so the cid is a perfect strong ETag. Content-Type is echoed
 * verbatim from the upload, so nosniff and a sandbox CSP keep uploaded HTML
 * from running on our origin.
 *
 * The fast path the pipeline tries first answers a plain GET of a cached
 * piece synchronously (no URL object, no Promise, no header edits); it
 * declines anything unusual (a Range, a conditional) and the handler
 * decides, still from memory for a cached piece.
 *
 * A piece a scrub marked corrupt answers 503 piece_corrupt, never its bytes;
 * one a sweep removed answers 410 gone. Cache hits skip the database, so a
 * marked or removed cid is evicted from the cache when `distrust` is told (by
 * the sweep, or the server's poll of the marks) or the handler sees it; and a
 * piece is cached only if it is still servable once its bytes are read, so a
 * read that raced the mark cannot put it back.
 */
import { normalizeCid } from "../../kernel/cid_format.ts";
import { ApiError } from "../../kernel/errors.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";
import { applyCorsHeaders } from "../pipeline/cors.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { bytesHeaders } from "./bytes_headers.ts";
import { decideAnswer, notModified, setRangeHeaders } from "./conditional_answer.ts";
import { contentDisposition } from "./content_disposition.ts";
import { CachedPiece } from "./small_piece_cache.ts";
import { answerPiece, sliceOf } from "./piece_answer.ts";
import { findServablePiece, stillServable, wholePiece } from "./stored_piece.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

export const RETRIEVAL_PATH = "/p/:cid";

/** The cid of a retrieval path, canonical; 400 invalid_cid when it is not one. */
export function cidParam(context: RequestContext): string {
  const cid = normalizeCid(context.params.cid);
  if (cid === null) throw new ApiError("invalid_cid", "cid must be 8 to 80 letters or digits");
  return cid;
}

export interface PieceRouteOptions {
  cid: string;
  /** False for /f/, which never hands a piece to nginx. */
  offload: boolean;
  /** The servable piece, when the caller has looked it up already (/f/): never twice. */
  piece?: PieceRecord;
}

/** The /p/ answer for a cid (and /f/'s for a piece that is not a manifest). */
export async function answerPieceRoute(
  request: Request,
  context: RequestContext,
  deps: RetrievalDeps,
  options: PieceRouteOptions,
): Promise<Response> {
  const { cid } = options;
  const etag = `"${cid}"`;
  // HEAD takes the catalog path below: cached answers carry no Content-Length to copy.
  const cached = request.method === "GET" ? deps.cache.get(cid) : undefined;
  if (cached && deps.reachability.reachable) {
    return await answerFromCache(request, context, cached, etag);
  }
  const piece = options.piece ?? await findServablePiece(deps, cid);
  const headers = pieceHeaders(piece, deps.store.source);
  const plainGet = request.method === "GET" && !request.headers.has("if-none-match");
  const bytes = plainGet && deps.cache.accepts(piece.size)
    ? await readAndCache(deps, piece, headers)
    : undefined;
  return await answerPiece(request, context, deps, {
    piece,
    headers,
    etag,
    offload: options.offload,
    bytes,
  });
}

/** A GET of a cached piece that the fast path declined (a Range, a conditional). */
async function answerFromCache(
  request: Request,
  context: RequestContext,
  cached: CachedPiece,
  etag: string,
): Promise<Response> {
  const answer = decideAnswer(request, context, { etag, size: cached.byteLength });
  if (answer.status === 304) return notModified(cached.headers);
  if (answer.status === 200) return cached.okResponse();
  const headers = new Headers(cached.headers as [string, string][]);
  setRangeHeaders(headers, answer);
  return new Response(sliceOf(await cached.bytes(), answer), { status: answer.status, headers });
}

/** A plain GET of a cached piece, answered synchronously; null to let the handler decide. */
export function fastPathOf(deps: RetrievalDeps): (request: Request) => Response | null {
  return (request) => {
    if (request.method !== "GET") return null;
    const url = request.url;
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    if (!url.startsWith("/p/", pathStart)) return null;
    const cidText = url.slice(pathStart + 3);
    const { headers } = request;
    if (
      cidText.includes("/") || cidText.includes("?") || headers.has("if-none-match") ||
      headers.has("range")
    ) {
      return null;
    }
    // Cids are cached in their canonical lowercase form, which is how clients almost
    // always send them: try the text as it is before validating and lowercasing it.
    let cached = deps.cache.get(cidText);
    if (!cached) {
      const cid = normalizeCid(cidText);
      if (cid !== null && cid !== cidText) cached = deps.cache.get(cid);
    }
    if (!cached || !deps.reachability.reachable) return null;
    return cached.okResponse();
  };
}

/**
 * The whole of a small piece, read to be cached (500 when the store holds
 * another size), and cached unless it was marked or removed while its bytes
 * were read: then they are answered this once (as a stream would have
 * been), but never from the cache.
 */
async function readAndCache(
  deps: RetrievalDeps,
  piece: PieceRecord,
  headers: Headers,
): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = await wholePiece(deps, piece);
  if (stillServable(await deps.catalog.getPiece(piece.cid))) {
    // Cached answers skip the pipeline's CORS step on the fast path, so they carry it.
    const cachedHeaders = new Headers(headers);
    applyCorsHeaders(cachedHeaders);
    deps.cache.set(piece.cid, new CachedPiece(bytes, [...cachedHeaders]));
  }
  return bytes;
}

/** The headers of a 200 from /p/ (and from /f/ for a piece that is not a manifest). */
function pieceHeaders(piece: PieceRecord, source: string): Headers {
  return bytesHeaders({
    contentType: piece.contentType,
    size: piece.size,
    contentDisposition: contentDisposition(piece.filename),
    etag: `"${piece.cid}"`,
    pieceCid: piece.cid,
    source,
  });
}
