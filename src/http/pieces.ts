/**
 * GET and HEAD /p/{cid} — public retrieval, streamed from the store.
 *
 * The straight line: cid format → small-piece cache → catalog row →
 * conditional request (304) → open the bytes → headers → body. Pieces are
 * immutable, so the cid is a perfect strong ETag. Content-Type is echoed
 * verbatim from the upload, so nosniff and a sandbox CSP keep uploaded HTML
 * from running on our origin.
 *
 * `createRetrieval` gives retrieval its one home: the route's handler, and a
 * fast path the pipeline tries first that answers a plain GET of a cached
 * piece synchronously (no URL object, no Promise, no header edits). The fast
 * path declines anything unusual and the handler decides.
 *
 * A piece a scrub marked corrupt answers 503 piece_corrupt, never its bytes.
 * Cache hits skip the database, so a marked cid is evicted from the cache
 * when `distrust` is told (by the server's poll of the marks) or the handler
 * sees the mark; and a piece is cached only if it is still unmarked once its
 * bytes are read, so a read that raced the mark cannot put it back.
 */
import { normalizeCid } from "../cid_format.ts";
import { ApiError } from "../errors.ts";
import type { PieceRecord } from "../db/records.ts";
import type { PieceCatalog } from "../storage/catalog.ts";
import { StoreError } from "../storage/driver/driver.ts";
import type { PieceStore } from "../storage/driver/driver.ts";
import type { StoreReachability } from "../storage/reachability.ts";
import type { Logger } from "../log.ts";
import { contentDisposition } from "./upload_headers.ts";
import { applyCorsHeaders } from "./cors.ts";
import { CachedPiece } from "./small_piece_cache.ts";
import type { SmallPieceCache } from "./small_piece_cache.ts";
import type { Handler } from "./router.ts";
import { CID_DESCRIPTION, CID_SCHEMA } from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";

export interface RetrievalDeps {
  store: PieceStore;
  catalog: PieceCatalog;
  logger: Logger;
  cache: SmallPieceCache;
  reachability: Pick<StoreReachability, "reachable">;
}

export interface Retrieval {
  /** The route handler for GET (and so HEAD) /p/:cid. */
  handler: Handler;
  /** A 200 for a plain GET of a cached piece, or null to let the pipeline and handler decide. */
  fastPath(request: Request): Response | null;
  /** Evicts cid from the cache: its stored bytes failed verification. */
  distrust(cid: string): void;
}

export const RETRIEVAL_PATH = "/p/:cid";

/** What a retrieval answer carries besides its body. */
const PIECE_HEADERS: HeaderUse = {
  "Content-Type": "always",
  "Content-Length": "always",
  "Content-Disposition": "always",
  "Cache-Control": "always",
  ETag: "always",
  "Accept-Ranges": "always",
  "X-Service-Piece-Cid": "always",
  "X-Service-Source": "always",
  "X-Content-Type-Options": "always",
  "Content-Security-Policy": "always",
};
const { "Content-Length": _noLengthWithoutBody, ...NOT_MODIFIED_HEADERS } = PIECE_HEADERS;

export const getPieceDoc: RouteDoc = {
  operationId: "getPiece",
  summary: "Retrieve a piece's bytes (public)",
  auth: "public",
  parameters: [
    { name: "cid", in: "path", description: CID_DESCRIPTION, schema: CID_SCHEMA },
    {
      name: "If-None-Match",
      in: "header",
      description: "An ETag of an earlier answer (or *): a match answers 304 without a body",
      schema: stringSchema,
    },
  ],
  responses: [
    {
      status: 200,
      description: "The stored bytes, with the Content-Type given at upload",
      body: { binary: true },
      headers: PIECE_HEADERS,
    },
    {
      status: 304,
      description: "Not modified: If-None-Match named this piece's ETag",
      headers: NOT_MODIFIED_HEADERS,
    },
  ],
  errors: ["invalid_cid", "not_found", "storage_offline", "piece_corrupt"],
};

export function createRetrieval(deps: RetrievalDeps): Retrieval {
  const handler: Handler = async (request, context) => {
    const cid = normalizeCid(context.params.cid);
    if (cid === null) {
      throw new ApiError("invalid_cid", "cid must be 8 to 80 letters or digits");
    }
    const ifNoneMatch = request.headers.get("if-none-match");
    // HEAD takes the catalog path below: cached answers carry no Content-Length to copy.
    const cached = request.method === "GET" ? deps.cache.get(cid) : undefined;
    if (cached && deps.reachability.reachable) {
      return matchesEtag(ifNoneMatch, cid) ? notModified(cached.headers) : cached.okResponse();
    }
    const piece = await deps.catalog.getPiece(cid);
    if (piece === null) {
      // Tell "not stored" from "cannot look": the store says offline if it is.
      await deps.store.stat(cid).catch((error) => {
        throw error instanceof StoreError && error.failure === "offline" ? offline() : error;
      });
      throw new ApiError("not_found", `No piece is stored under ${cid}`);
    }
    if (piece.corruptAt !== null) {
      deps.cache.delete(cid);
      throw new ApiError(
        "piece_corrupt",
        `The stored bytes of ${cid} failed verification; the operator must restore it from a backup`,
      );
    }
    const headers = pieceHeaders(piece, deps.store.source);
    const conditionalHit = matchesEtag(ifNoneMatch, cid);
    if (request.method === "HEAD" || conditionalHit) {
      // No body to send, but still answer only for bytes that are really there.
      await mustExist(deps, cid, () => deps.store.stat(cid));
      return conditionalHit ? notModified(headers) : new Response(null, { status: 200, headers });
    }
    const opened = await mustExist(deps, cid, () => deps.store.open(cid));
    context.logFields.bytesOut = opened.size;
    if (!deps.cache.accepts(opened.size)) {
      return new Response(opened.body, { status: 200, headers });
    }
    const bytes = new Uint8Array(await new Response(opened.body).arrayBuffer());
    if (bytes.byteLength !== piece.size) {
      throw new ApiError("internal_error", `Piece ${cid} has ${bytes.byteLength} bytes on disk`);
    }
    // Marked while its bytes were read: answer them this once (as a stream would have),
    // but never from the cache.
    if ((await deps.catalog.getPiece(cid))?.corruptAt !== null) {
      return new Response(bytes, { status: 200, headers });
    }
    // Cached answers skip the pipeline's CORS step on the fast path, so they carry it.
    applyCorsHeaders(headers);
    const entry = new CachedPiece(bytes, [...headers]);
    deps.cache.set(cid, entry);
    return entry.okResponse();
  };

  function fastPath(request: Request): Response | null {
    if (request.method !== "GET") return null;
    const url = request.url;
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    if (!url.startsWith("/p/", pathStart)) return null;
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
    if (!cached || !deps.reachability.reachable) return null;
    return cached.okResponse();
  }

  return { handler, fastPath, distrust: (cid) => deps.cache.delete(cid.toLowerCase()) };
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

/** 304 with the piece's headers but no Content-Length (there is no body). */
function notModified(headers: Headers | readonly [string, string][]): Response {
  const sent = new Headers(headers as HeadersInit);
  sent.delete("content-length");
  return new Response(null, { status: 304, headers: sent });
}

/** True when If-None-Match names this piece's ETag (weak or strong) or is "*". */
function matchesEtag(ifNoneMatch: string | null, cid: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === `"${cid}"` || t === `W/"${cid}"`;
  });
}

async function mustExist<T>(deps: RetrievalDeps, cid: string, read: () => Promise<T | null>) {
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
