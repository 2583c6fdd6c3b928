/**
 * What a retrieval's Range and If-Range headers ask for (RFC 9110 §14 and
 * §13.1.5), decided once for every route that serves bytes (/p/, /f/,
 * /piece/):
 *
 * - no Range, a unit other than bytes, a malformed range set, or an If-Range
 *   that does not name the current representation: the whole file, 200;
 * - more than one range: the whole file, 200 (one range is what players,
 *   resuming downloads and storage providers ask for; a multipart answer
 *   would cost a body format nobody here needs);
 * - one range that starts inside the file (`a-b`, `a-`, or a suffix `-n`
 *   with n > 0): 206 with exactly those bytes, cut at the end of the file;
 * - one range that does not: 416, with `Content-Range: bytes *\/<size>`.
 *
 * If-Range is compared strongly against the ETag (a weak tag never
 * matches); an HTTP-date never matches, as retrieval sends no Last-Modified.
 */

export type RangeDecision =
  /** `ignoredRange`: a Range header was sent and not honoured (several ranges, If-Range…). */
  | { kind: "whole"; ignoredRange: boolean }
  | { kind: "partial"; offset: number; length: number }
  | { kind: "unsatisfiable" };

/** Decimal digits only: RFC 9110's 1*DIGIT, no sign, no spaces. */
const DIGITS = /^\d+$/;

export function decideRange(headers: Headers, size: number, etag: string): RangeDecision {
  const range = headers.get("range");
  if (range === null) return { kind: "whole", ignoredRange: false };
  const ignored = { kind: "whole", ignoredRange: true } as const;
  const ifRange = headers.get("if-range");
  if (ifRange !== null && ifRange.trim() !== etag) return ignored;
  const specs = rangeSpecsOf(range);
  if (specs === null || specs.length !== 1) return ignored;
  const [spec] = specs;
  const offset = spec.first === null ? Math.max(0, size - spec.suffix!) : spec.first;
  if (spec.first === null ? spec.suffix === 0 : spec.first >= size) {
    return { kind: "unsatisfiable" };
  }
  const last = spec.first === null || spec.last === null ? size - 1 : Math.min(spec.last, size - 1);
  return { kind: "partial", offset, length: last - offset + 1 };
}

/** `bytes a-b/size` for a 206 of `length` bytes from `offset`. */
export function contentRangeOf(offset: number, length: number, size: number): string {
  return `bytes ${offset}-${offset + length - 1}/${size}`;
}

/** `bytes *\/size` for a 416. */
export function unsatisfiedRangeOf(size: number): string {
  return `bytes */${size}`;
}

interface RangeSpec {
  /** first-pos, or null for a suffix range. */
  first: number | null;
  /** last-pos of an int-range; null when open-ended or a suffix range. */
  last: number | null;
  /** suffix-length of a suffix range. */
  suffix: number | null;
}

/** The byte-range-specs of a Range value, or null when it is not a valid bytes range set. */
function rangeSpecsOf(value: string): RangeSpec[] | null {
  const equals = value.indexOf("=");
  if (equals < 0 || value.slice(0, equals).trim().toLowerCase() !== "bytes") return null;
  const specs: RangeSpec[] = [];
  // A list (RFC 9110 §5.6.1): elements separated by commas with optional whitespace; empty
  // elements do not count.
  for (const element of value.slice(equals + 1).split(",")) {
    const text = element.trim();
    if (text === "") continue;
    const dash = text.indexOf("-");
    if (dash < 0) return null;
    const [before, after] = [text.slice(0, dash), text.slice(dash + 1)];
    if (before === "") {
      if (!DIGITS.test(after)) return null;
      specs.push({ first: null, last: null, suffix: Number(after) });
      continue;
    }
    if (!DIGITS.test(before) || (after !== "" && !DIGITS.test(after))) return null;
    const first = Number(before);
    const last = after === "" ? null : Number(after);
    // last-pos before first-pos makes the whole header invalid (§14.1.1).
    if (last !== null && last < first) return null;
    specs.push({ first, last, suffix: null });
  }
  return specs.length === 0 ? null : specs;
}
