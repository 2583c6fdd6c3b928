/**
 * The answer to a stored upload or a deal made, written once for POST
 * /api/upload, POST /api/deals and an upload through a signed link: the
 * upload result (with the piece's hand-off when the server hands pieces on)
 * and the caller's daily cap as RateLimit fields.
 */
import { rateLimitHeaders } from "../../limits/rate_limit_headers.ts";
import type { Committed } from "../../uploads/pipeline.ts";
import { uploadResultOf } from "../../uploads/terms.ts";
import { jsonResponse } from "../pipeline/json.ts";

/** 200 with the upload result of `done` under the cid as the client gave it. */
export function committedAnswer(done: Committed, givenCid: string, baseUrl: string): Response {
  const result = uploadResultOf(done.deal, givenCid, baseUrl, done.roots, done.handoff);
  return jsonResponse(200, result, rateLimitHeaders(done.capStatus));
}
