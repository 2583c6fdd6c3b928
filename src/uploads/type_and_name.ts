/** Validation of the upload's descriptive headers: Content-Type and X-Filename. */
import { ApiError } from "../kernel/errors.ts";

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[^"\\\\\\x00-\\x08\\x0a-\\x1f\\x7f]|\\\\[\\x09\\x20-\\x7e])*"';
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED_STRING}))*[ \\t]*$`,
);
const MAX_CONTENT_TYPE_LENGTH = 1024;
export const MAX_FILENAME_BYTES = 255;
/**
 * Controls that reorder how the rest of a name is shown: "invoice\u202Efdp.exe"
 * reads "invoiceexe.pdf" in a file list.
 */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
/**
 * Characters a person cannot see or that break a line where none shows: the
 * line and paragraph separators (U+2028, U+2029: line breaks to a JavaScript
 * string and to many viewers) and the zero-width ones (U+200B-U+200D,
 * U+FEFF), which make two names that look alike differ.
 */
const INVISIBLE = /[\u2028\u2029\u200b-\u200d\ufeff]/;

/**
 * Returns the Content-Type verbatim if it is a syntactically valid media type
 * (RFC 9110) and not a form: a form body is the file wrapped in an envelope,
 * and storing it would serve the envelope back under the cid.
 */
export function requireContentType(value: string | null): string {
  if (value === null || value.trim() === "") {
    throw new ApiError("invalid_content_type", "Content-Type header is required");
  }
  if (value.length > MAX_CONTENT_TYPE_LENGTH || !MEDIA_TYPE.test(value)) {
    throw new ApiError("invalid_content_type", "Content-Type must be a media type like text/plain");
  }
  const essence = value.split(";")[0].trim().toLowerCase();
  if (essence === "multipart/form-data") {
    // curl -F and a browser's FormData wrap the file in a multipart envelope.
    throw new ApiError(
      "invalid_content_type",
      "Send the file's raw bytes as the body with its own Content-Type, not a form " +
        "(curl --data-binary @file -H 'Content-Type: …' instead of -F; fetch(url, {body: file}))",
    );
  }
  if (essence === "application/x-www-form-urlencoded") {
    // curl --data-binary without -H Content-Type sends the file under this type.
    throw new ApiError(
      "invalid_content_type",
      "application/x-www-form-urlencoded is a form, not a file type: send the file's own " +
        "Content-Type (curl: -H 'Content-Type: application/octet-stream')",
    );
  }
  return value;
}

/**
 * URL-decodes X-Filename. The name is only ever echoed in Content-Disposition
 * (never used as a path), but control characters are refused so no header or
 * log line can be split by a stored name, and bidirectional controls so no
 * name can show its extension as another.
 */
export function decodeFilename(value: string | null): string | null {
  if (value === null) return null;
  let name: string;
  try {
    name = decodeURIComponent(value);
  } catch {
    throw new ApiError("invalid_filename", "X-Filename must be URL-encoded UTF-8");
  }
  return checkFilename(name, "X-Filename");
}

/** A decoded file name as the service stores it, or 400 invalid_filename naming `where`. */
export function checkFilename(name: string, where: string): string {
  if (name === "") throw new ApiError("invalid_filename", `${where} must not be empty`);
  if (new TextEncoder().encode(name).byteLength > MAX_FILENAME_BYTES) {
    throw new ApiError(
      "invalid_filename",
      `${where} must be at most ${MAX_FILENAME_BYTES} bytes`,
    );
  }
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw new ApiError("invalid_filename", `${where} must not contain control characters`);
  }
  if (BIDI_CONTROLS.test(name)) {
    throw new ApiError(
      "invalid_filename",
      `${where} must not contain bidirectional text controls (U+061C, U+200E, U+200F, ` +
        "U+202A to U+202E, U+2066 to U+2069)",
    );
  }
  if (INVISIBLE.test(name)) {
    throw new ApiError(
      "invalid_filename",
      `${where} must not contain line or paragraph separators (U+2028, U+2029) or zero-width ` +
        "characters (U+200B to U+200D, U+FEFF)",
    );
  }
  return name;
}
