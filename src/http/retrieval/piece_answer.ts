/**
 * The answer for one stored piece, whichever route serves it (/p/, /f/ of a
 * piece that is not a manifest, /piece/): each route brings the piece, its
 * headers and its ETag; this decides, in RFC 9110's order, If-None-Match
 * (304), then Range and If-Range (206, 416, or the whole piece), then HEAD
 * (headers only), then where the bytes come from: memory (a small piece the
 * cache holds), nginx (--x-accel-redirect, when the route allows it), or the
 * store, which reads only the range asked for.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { offloadable } from "./offload.ts";
import { contentRangeOf, decideRange, unsatisfiedRangeOf } from "./range_request.ts";
import type { RangeDecision } from "./range_request.ts";
import { mustExist } from "./stored_piece.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

export interface PieceAnswerInput {
  piece: PieceRecord;
  /** The headers of a 200 with the whole piece (Content-Length included). */
  headers: Headers;
  /** The quoted ETag, as If-None-Match and If-Range must name it. */
  etag: string;
  /** Whether nginx may send the file (never for /f/). */
  offload: boolean;
  /** The piece's bytes when memory has them (the small-piece cache). */
  bytes?: Uint8Array<ArrayBuffer>;
}

export async function answerPiece(
  request: Request,
  context: RequestContext,
  deps: RetrievalDeps,
  input: PieceAnswerInput,
): Promise<Response> {
  const { piece, headers, etag } = input;
  const cid = piece.cid;
  if (matchesEtag(request.headers.get("if-none-match"), etag)) {
    if (!input.bytes) await mustExist(deps, cid, () => deps.store.stat(cid));
    return notModified(headers);
  }
  const decision = decideRange(request.headers, piece.size, etag);
  const { status, length } = applyRange(decision, headers, piece.size, context);
  if (request.method === "HEAD") {
    // No body to send, but still answer only for bytes that are really there.
    if (!input.bytes) await mustExist(deps, cid, () => deps.store.stat(cid));
    return new Response(null, { status, headers });
  }
  context.logFields.bytesOut = length;
  if (input.bytes) return new Response(sliceOf(input.bytes, decision), { status, headers });
  const redirect = input.offload && offloadable(decision)
    ? deps.offload?.redirectFor(cid) ?? null
    : null;
  if (redirect !== null) {
    await mustExist(deps, cid, () => deps.store.stat(cid));
    // nginx sends the file with its own length (and cuts the range itself): no body here.
    headers.delete("content-length");
    // nginx adds its own Accept-Ranges: bytes to a whole file (not to a range): never two.
    if (status === 200) headers.delete("accept-ranges");
    headers.set("x-accel-redirect", redirect);
    context.logFields.offloaded = true;
    return new Response(null, { status, headers });
  }
  const range = decision.kind === "partial" ? decision : undefined;
  const opened = await mustExist(deps, cid, () => deps.store.open(cid, range));
  return new Response(opened.body, { status, headers });
}

/**
 * Sets what a range decision changes in a 200's headers (206: Content-Range and
 * the range's length; 416: thrown) and returns the status and body length.
 */
export function applyRange(
  decision: RangeDecision,
  headers: Headers,
  size: number,
  context: RequestContext,
): { status: 200 | 206; length: number } {
  if (decision.kind === "unsatisfiable") {
    context.logFields.range = "unsatisfiable";
    throw new ApiError(
      "range_not_satisfiable",
      `The range asked for does not start inside the ${size} bytes stored`,
      { headers: { "content-range": unsatisfiedRangeOf(size) } },
    );
  }
  if (decision.kind === "whole") {
    if (decision.ignoredRange) context.logFields.range = "ignored";
    return { status: 200, length: size };
  }
  const { offset, length } = decision;
  headers.set("content-range", contentRangeOf(offset, length, size));
  headers.set("content-length", String(length));
  context.logFields.range = `${offset}-${offset + length - 1}`;
  return { status: 206, length };
}

/** The bytes a decision asks for, from memory (a view, not a copy). */
export function sliceOf(bytes: Uint8Array<ArrayBuffer>, decision: RangeDecision) {
  if (decision.kind !== "partial") return bytes;
  return bytes.subarray(decision.offset, decision.offset + decision.length);
}

/** 304 with the answer's headers but no Content-Length (there is no body). */
export function notModified(headers: Headers | readonly [string, string][]): Response {
  const sent = new Headers(headers as HeadersInit);
  sent.delete("content-length");
  return new Response(null, { status: 304, headers: sent });
}

/** True when If-None-Match names this ETag (weak comparison, as RFC 9110 says) or is "*". */
export function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}
