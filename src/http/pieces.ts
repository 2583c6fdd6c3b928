/**
 * GET and HEAD /p/{cid} — public retrieval, streamed from the store.
 *
 * The straight line: cid format → catalog row → conditional request (304) →
 * open the bytes → headers → body. Pieces are immutable, so the cid is a
 * perfect strong ETag. Content-Type is echoed verbatim from the upload, so
 * nosniff and a sandbox CSP keep uploaded HTML from running on our origin.
 */
import { normalizeCid } from "../cid.ts";
import { ApiError } from "../errors.ts";
import type { PieceRecord } from "../db/records.ts";
import type { PieceCatalog } from "../store/catalog.ts";
import { StoreError } from "../store/driver.ts";
import type { PieceStore } from "../store/driver.ts";
import type { Logger } from "../log.ts";
import { contentDisposition } from "./upload_headers.ts";
import { applyCorsHeaders } from "./cors.ts";
import { CachedPiece } from "./small_piece_cache.ts";
import type { SmallPieceCache } from "./small_piece_cache.ts";
import type { Handler } from "./router.ts";

export interface PieceDeps {
  store: PieceStore;
  catalog: PieceCatalog;
  logger: Logger;
  cache: SmallPieceCache;
  /** False while the store's root is known to be gone (checked every second). */
  storeReachable(): boolean;
}

export function createPieceHandler(deps: PieceDeps): Handler {
  return async (request, context) => {
    const cid = normalizeCid(context.params.cid);
    if (cid === null) {
      throw new ApiError("invalid_cid", "cid must be 8 to 80 letters or digits");
    }
    const cached = deps.cache.get(cid);
    if (cached && deps.storeReachable()) return cachedResponse(request, cached, cid);
    const piece = deps.catalog.getPiece(cid);
    if (piece === null) {
      // Tell "not stored" from "cannot look": the store says offline if it is.
      await deps.store.stat(cid).catch((error) => {
        throw error instanceof StoreError && error.failure === "offline" ? offline() : error;
      });
      throw new ApiError("not_found", `No piece is stored under ${cid}`);
    }
    const headers = pieceHeaders(piece, deps.store.source);

    if (request.method === "HEAD" || matchesEtag(request.headers.get("if-none-match"), cid)) {
      // No body to send, but still answer only for bytes that are really there.
      await mustExist(deps, cid, () => deps.store.stat(cid));
      if (request.method === "HEAD") return new Response(null, { status: 200, headers });
      headers.delete("content-length");
      return new Response(null, { status: 304, headers });
    }
    const opened = await mustExist(deps, cid, () => deps.store.open(cid));
    context.logFields.bytesOut = opened.size;
    if (deps.cache.accepts(opened.size)) {
      const bytes = new Uint8Array(await new Response(opened.body).arrayBuffer());
      if (bytes.byteLength !== piece.size) {
        throw new ApiError("internal_error", `Piece ${cid} has ${bytes.byteLength} bytes on disk`);
      }
      applyCorsHeaders(headers);
      const entry = new CachedPiece(bytes, [...headers]);
      deps.cache.set(cid, entry);
      return cachedResponse(request, entry, cid);
    }
    return new Response(opened.body, { status: 200, headers });
  };
}

function cachedResponse(request: Request, cached: CachedPiece, cid: string): Response {
  if (matchesEtag(request.headers.get("if-none-match"), cid)) {
    const headers = new Headers(cached.headers);
    headers.delete("content-length");
    return new Response(null, { status: 304, headers });
  }
  if (request.method === "HEAD") {
    return new Response(null, { status: 200, headers: cached.headers as [string, string][] });
  }
  return cached.okResponse();
}

function pieceHeaders(piece: PieceRecord, source: string): Headers {
  return new Headers({
    "content-type": piece.contentType,
    "content-length": String(piece.size),
    "content-disposition": contentDisposition(piece.filename),
    "cache-control": "public, max-age=3600",
    "etag": `"${piece.cid}"`,
    "accept-ranges": "none",
    "x-service-piece-cid": piece.cid,
    "x-service-source": source,
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
  });
}

/** True when If-None-Match names this piece's ETag (weak or strong) or is "*". */
function matchesEtag(ifNoneMatch: string | null, cid: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === `"${cid}"` || t === `W/"${cid}"`;
  });
}

async function mustExist<T>(deps: PieceDeps, cid: string, read: () => Promise<T | null>) {
  let result: T | null;
  try {
    result = await read();
  } catch (error) {
    if (error instanceof StoreError && error.failure === "offline") throw offline();
    throw error;
  }
  if (result === null) {
    // The database knows the piece but the store does not: never serve a guess.
    deps.logger.error("piece missing from store", { cid });
    throw new ApiError("internal_error", `Piece ${cid} is recorded but its bytes are missing`);
  }
  return result;
}

function offline(): ApiError {
  return new ApiError("storage_offline", "Storage backend is offline; try again later");
}

/**
 * The hot path of the whole service: a plain GET of a cached piece, answered
 * before the generic pipeline runs (no URL object, no header edits: the cached
 * headers already include CORS). Returns null whenever anything is unusual
 * (a query string, a conditional request, HEAD), and the normal path decides.
 */
export function serveCachedPiece(
  request: Request,
  deps: Pick<PieceDeps, "cache" | "storeReachable">,
): Response | null {
  if (request.method !== "GET") return null;
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (url.startsWith("/p/", pathStart) === false) return null;
  const cidText = url.slice(pathStart + 3);
  if (cidText.includes("/") || cidText.includes("?") || request.headers.has("if-none-match")) {
    return null;
  }
  // Cids are cached in their canonical lowercase form, which is how clients almost
  // always send them: try the text as it is before validating and lowercasing it.
  let cached = deps.cache.get(cidText);
  if (!cached) {
    const cid = normalizeCid(cidText);
    if (cid !== null && cid !== cidText) cached = deps.cache.get(cid);
  }
  if (!cached || !deps.storeReachable()) return null;
  return cached.okResponse();
}
