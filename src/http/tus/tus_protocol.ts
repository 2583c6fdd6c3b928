/**
 * The tus 1.0.0 protocol's headers (https://tus.io/protocols/resumable-upload):
 * reading what clients send (Tus-Resumable, Upload-Length, Upload-Offset,
 * Upload-Metadata) and what every answer carries. The handlers are tus.ts.
 *
 * Offered extensions: creation, creation-with-upload, termination and
 * expiration. Not offered (and so not listed): checksum, concatenation and
 * creation-defer-length, whose Upload-Defer-Length is refused with 400.
 */
import { ApiError } from "../../kernel/errors.ts";
import { checkFilename, requireContentType } from "../../uploads/type_and_name.ts";

export const TUS_VERSION = "1.0.0";
export const TUS_EXTENSIONS = "creation,creation-with-upload,termination,expiration";
/** The body type of a PATCH (and of a POST that carries bytes). */
export const OFFSET_OCTET_STREAM = "application/offset+octet-stream";
/** Upload-Metadata longer than this is refused: it is stored and echoed by every HEAD. */
const MAX_METADATA_CHARS = 4096;

/** Every tus request but OPTIONS names the protocol version; this server speaks 1.0.0. */
export function requireTusVersion(headers: Headers): void {
  const version = headers.get("tus-resumable");
  if (version === TUS_VERSION) return;
  throw new ApiError(
    "unsupported_version",
    version === null
      ? "Tus-Resumable: 1.0.0 is required on tus requests"
      : `Tus-Resumable ${version} is not supported; this server speaks 1.0.0`,
    { headers: { "tus-version": TUS_VERSION } },
  );
}

/** A non-negative whole number of bytes from a header, or 400 naming it. */
export function byteCountOf(headers: Headers, name: string): number | null {
  const raw = headers.get(name);
  if (raw === null) return null;
  const value = /^\d{1,16}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value)) {
    throw new ApiError("invalid_request", `${name} must be a whole number of bytes`);
  }
  return value;
}

/** Upload-Length of a creation (deferring it is not offered). */
export function requireUploadLength(headers: Headers): number {
  if (headers.has("upload-defer-length")) {
    throw new ApiError(
      "invalid_request",
      "Upload-Defer-Length is not supported here: send Upload-Length",
    );
  }
  const length = byteCountOf(headers, "upload-length");
  if (length === null) throw new ApiError("invalid_request", "Upload-Length is required");
  if (length === 0) {
    throw new ApiError("empty_bodyy", "Upload-Length is 0: the service stores no empty files");
  }
  return length;
}

/** What this service reads from Upload-Metadata, and the header as sent (echoed by HEAD). */
export interface UploadMetadata {
  cid: string | null;
  contentType: string;
  filename: string | null;
  raw: string;
}

/**
 * Upload-Metadata: comma-separated `key base64(value)` pairs. `cid` and
 * `filetype` (the Content-Type) are required, `filename` is optional; other
 * keys are allowed and ignored (Uppy sends `name` and `type` as well).
 */
export function parseUploadMetadata(header: string | null): UploadMetadata {
  const raw = (header ?? "").trim();
  if (raw.length > MAX_METADATA_CHARS) {
    throw new ApiError(
      "invalid_request",
      `Upload-Metadata is over ${MAX_METADATA_CHARS} characters`,
    );
  }
  const pairs = new Map<string, string>();
  for (const pair of raw === "" ? [] : raw.split(",")) {
    const [key, value, ...rest] = pair.trim().split(" ");
    if (!key || rest.length > 0 || pairs.has(key)) {
      throw new ApiError(
        "invalid_request",
        "Upload-Metadata must be comma-separated `key base64value` pairs with distinct keys",
      );
    }
    pairs.set(key, decodeValue(key, value ?? ""));
  }
  const filetype = pairs.get("filetype");
  if (filetype === undefined || filetype === "") {
    throw new ApiError(
      "invalid_content_type",
      "Upload-Metadata filetype (the file's Content-Type) is required",
    );
  }
  const filename = pairs.get("filename");
  return {
    cid: pairs.get("cid") ?? null,
    contentType: requireContentType(filetype),
    filename: filename === undefined ? null : checkFilename(filename, "Upload-Metadata filename"),
    raw,
  };
}

function decodeValue(key: string, value: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.fromBase64(value));
  } catch {
    throw new ApiError("invalid_request", `Upload-Metadata ${key} must be base64 of UTF-8 text`);
  }
}

/** The headers every tus answer carries, and those of an upload's state. */
export function tusHeaders(
  state?: { offset: number; length?: number; expiresMs?: number | null },
): Record<string, string> {
  const headers: Record<string, string> = {
    "tus-resumable": TUS_VERSION,
    "cache-control": "no-store",
  };
  if (state === undefined) return headers;
  headers["upload-offset"] = String(state.offset);
  if (state.length !== undefined) headers["upload-length"] = String(state.length);
  if (state.expiresMs) headers["upload-expires"] = new Date(state.expiresMs).toUTCString();
  return headers;
}

/** What OPTIONS answers on the tus endpoint (protocol discovery). */
export function tusDiscoveryHeaders(maxSize: number | null): Record<string, string> {
  const headers: Record<string, string> = {
    "tus-resumable": TUS_VERSION,
    "tus-version": TUS_VERSION,
    "tus-extension": TUS_EXTENSIONS,
  };
  if (maxSize !== null) headers["tus-max-size"] = String(maxSize);
  return headers;
}
