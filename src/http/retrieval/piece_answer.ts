/**
 * The answer for one stored piece, whichever route serves it (/p/, /f/ of a
 * piece that is not a manifest, /piece/): each route brings the piece, its
 * headers and its ETag; the conditional answer (conditional_answer.ts)
 * decides 304, 206, 416 or the whole piece; then HEAD answers headers only,
 * and a GET's bytes come from memory (a small piece the cache holds), nginx
 * (--x-accel-redirect, when the route allows it and the request came through
 * a trusted proxy), or the store, which reads only the range asked for.
 */
import type { PieceRecord } from "../../domain/catalog_records.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { decideAnswer, notModified, rangeOf, setRangeHeaders } from "./conditional_answer.ts";
import type { BytesAnswer } from "./conditional_answer.ts";
import { offloadable } from "./offload.ts";
import { cutsAtContentLength } from "../../net/serve_connection.ts";
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
  const answer = decideAnswer(request, context, { etag, size: piece.size });
  if (answer.status === 304 || request.method === "HEAD") {
    // No body to send, but still answer only for bytes that are really there.
    if (!input.bytes) await mustExist(deps, cid, () => deps.store.stat(cid));
    if (answer.status === 304) return notModified(headers);
  }
  setRangeHeaders(headers, answer);
  if (request.method === "HEAD") return new Response(null, { status: answer.status, headers });
  context.logFields.bytesOut = rangeOf(answer, piece.size).length;
  if (input.bytes) {
    return new Response(sliceOf(input.bytes, answer), { status: answer.status, headers });
  }
  // Only the proxy turns X-Accel-Redirect into bytes: anyone else gets them from us.
  const redirect = input.offload && context.viaTrustedProxy && offloadable(answer)
    ? deps.offload?.redirectFor(cid) ?? null
    : null;
  if (redirect !== null) {
    await mustExist(deps, cid, () => deps.store.stat(cid));
    // nginx sends the file with its own length (and cuts the range itself): no body here.
    headers.delete("content-length");
    // nginx adds its own Accept-Ranges: bytes to a whole file (not to a range): never two.
    if (answer.status === 200) headers.delete("accept-ranges");
    headers.set("x-accel-redirect", redirect);
    context.logFields.offloaded = true;
    return new Response(null, { status: answer.status, headers });
  }
  const range = answer.status === 206 ? answer.range : undefined;
  // Straight into the answer: where the server cuts it at its Content-Length, the body may run
  // on past the range (driver.ts OpenOptions).
  const answerWithLength = cutsAtContentLength(request);
  const opened = await mustExist(
    deps,
    cid,
    () => deps.store.open(cid, range, { answerWithLength }),
  );
  return new Response(opened.body, { status: answer.status, headers });
}

/** The bytes an answer carries, from memory (a view, not a copy). */
export function sliceOf(bytes: Uint8Array<ArrayBuffer>, answer: BytesAnswer) {
  if (answer.status !== 206) return bytes;
  const { offset, length } = answer.range;
  return bytes.subarray(offset, offset + length);
}
