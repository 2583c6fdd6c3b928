/**
 * Retrieval's one conditional answer: what a GET or HEAD of one
 * representation (a piece on /p/ and /piece/, a whole file on /f/) answers
 * before any of its bytes are read, decided in RFC 9110's order (§13.2.2):
 * If-None-Match naming its ETag is 304; then a Range, honoured only when no
 * If-Range or one naming the same ETag came with it, is 206 with one range,
 * 416 for a range that starts past the end, or else 200 with the whole
 * (range_request.ts reads the two headers).
 *
 * Written once so the three routes cannot drift apart; each brings its own
 * ETag, size and 200 headers, and decides itself where the bytes come from
 * (memory, nginx or the store: piece_answer.ts; a split file's pieces:
 * files.ts). There is no 412 to decide: retrieval honours no If-Match or
 * If-Unmodified-Since and sends no Last-Modified, so an If-Range date never
 * matches.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { ByteRange } from "../../driver/driver.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { contentRangeOf, decideRange, unsatisfiedRangeOf } from "./range_request.ts";

/** What a conditional request is compared with. */
export interface Representation {
  /** The quoted strong ETag, as If-None-Match and If-Range must name it. */
  etag: string;
  /** Its length in bytes. */
  size: number;
}

/** An answer that carries bytes (or, for HEAD, their headers). */
export type BytesAnswer =
  /** `ignoredRange`: a Range header was sent and not honoured (several ranges, If-Range…). */
  | { status: 200; ignoredRange: boolean }
  /** `contentRange`: `bytes a-b/size`. */
  | { status: 206; range: ByteRange; contentRange: string };

export type ConditionalAnswer = { status: 304 } | BytesAnswer;

const NOT_MODIFIED = { status: 304 } as const;
const WHOLE = { status: 200, ignoredRange: false } as const;
const WHOLE_RANGE_IGNORED = { status: 200, ignoredRange: true } as const;

/**
 * 304, 206 or 200 for the request; 416 range_not_satisfiable (with
 * `Content-Range: bytes *\/size`) is thrown. The range's fate goes to the
 * request's log line.
 */
export function decideAnswer(
  request: Request,
  context: RequestContext,
  representation: Representation,
): ConditionalAnswer {
  const { etag, size } = representation;
  if (matchesEtag(request.headers.get("if-none-match"), etag)) return NOT_MODIFIED;
  const decision = decideRange(request.headers, size, etag);
  if (decision.kind === "unsatisfiable") {
    context.logFields.range = "unsatisfiable";
    throw new ApiError(
      "range_not_satisfiable",
      `The range asked for does not start inside the ${size} bytes stored`,
      { headers: { "content-range": unsatisfiedRangeOf(size) } },
    );
  }
  if (decision.kind === "whole") {
    if (!decision.ignoredRange) return WHOLE;
    context.logFields.range = "ignored";
    return WHOLE_RANGE_IGNORED;
  }
  const { offset, length } = decision;
  context.logFields.range = `${offset}-${offset + length - 1}`;
  return {
    status: 206,
    range: { offset, length },
    contentRange: contentRangeOf(offset, length, size),
  };
}

/** Turns a 200's headers into the answer's: a 206 says its range and that range's length. */
export function setRangeHeaders(headers: Headers, answer: BytesAnswer): void {
  if (answer.status !== 206) return;
  headers.set("content-range", answer.contentRange);
  headers.set("content-length", String(answer.range.length));
}

/** The bytes of a representation of `size` that the answer's body holds. */
export function rangeOf(answer: BytesAnswer, size: number): ByteRange {
  return answer.status === 206 ? answer.range : { offset: 0, length: size };
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
