/**
 * The one error type of the service and the one table of its codes.
 *
 * Codes are part of the contract (clients match on them), so they are spelled
 * exactly as in the interface document, `empty_bodyy` included. Messages are
 * for people and may change.
 */

/** Every error code the service can answer with, and its HTTP status. */
export const ERROR_STATUS = {
  invalid_cid: 400,
  no_body: 400,
  empty_bodyy: 400,
  invalid_content_type: 400,
  invalid_filename: 400,
  incomplete_body: 400,
  cid_mismatch: 400,
  invalid_car: 400,
  invalid_json: 400,
  invalid_email: 400,
  invalid_label: 400,
  invalid_scopes: 400,
  invalid_quota: 400,
  invalid_request: 400,
  invalid_code: 400,
  invalid_manifest: 400,
  manifest_incomplete: 400,
  invalid_token: 401,
  revoked_token: 401,
  invalid_signature: 401,
  invalid_link: 401,
  insufficient_scope: 403,
  signup_closed: 403,
  csrf_rejected: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  cid_conflict: 409,
  offset_mismatch: 409,
  upload_incomplete: 409,
  gone: 410,
  length_required: 411,
  unsupported_version: 412,
  too_large: 413,
  too_many_blocks: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  upload_locked: 423,
  rate_limited: 429,
  too_many_uploads: 429,
  quota_exceeded: 429,
  internal_error: 500,
  stage_failed: 502,
  storage_offline: 503,
  mail_unavailable: 503,
  server_busy: 503,
  wallet_unavailable: 503,
  piece_corrupt: 503,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * Headers a code is always sent with unless the thrower gives its own:
 * storage_offline is an outage the caller should wait out (a bucket or a
 * database that does not answer), so it always says when to try again.
 */
const DEFAULT_HEADERS: { readonly [code in ErrorCode]?: Readonly<Record<string, string>> } = {
  storage_offline: { "retry-after": "5" },
};

export interface ApiErrorOptions {
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error that becomes a JSON response `{"error": code, "message": message}`. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.headers = { ...DEFAULT_HEADERS[code], ...options.headers };
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** Renders an ApiError as the JSON body every endpoint uses for errors. */
export function errorResponse(error: ApiError, method = "GET"): Response {
  const headers = new Headers(error.headers);
  headers.set("content-type", "application/json");
  headers.set("cache-control", "no-store");
  if (error.status === 401 && !headers.has("www-authenticate")) {
    headers.set("www-authenticate", 'Bearer error="invalid_token"');
  }
  const body = JSON.stringify({ error: error.code, message: error.message });
  // HEAD answers carry the headers of the error, its length included, but never a body.
  if (method !== "HEAD") return new Response(body, { status: error.status, headers });
  headers.set("content-length", String(new TextEncoder().encode(body).byteLength));
  return new Response(null, { status: error.status, headers });
}
