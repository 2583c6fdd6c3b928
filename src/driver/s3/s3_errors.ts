/**
 * Maps what S3 answers (or fails to answer) to the driver's failures
 * (driver.ts), so the HTTP layer answers 503/507/502 without knowing S3:
 *
 *   - no answer (network error, timeout), 5xx, 429, SlowDown, RequestTimeout:
 *     "offline", and worth retrying a buffered request;
 *   - refused credentials or access (403 SignatureDoesNotMatch, AccessDenied, …)
 *     and a missing bucket: "offline" too, since the store as configured cannot
 *     be used and no retry or other piece will do better; not retried;
 *   - quota and capacity refusals (QuotaExceeded, InsufficientCapacity, 507) and
 *     EntityTooLarge: "full", the piece does not fit this store;
 *   - any other 4xx: "rejected".
 *
 * Messages name the operation, status and S3's error code and message; never
 * a credential (requests carry only a signature, and URLs never hold keys).
 */
import { StoreError } from "../driver.ts";
import type { StoreFailure } from "../driver.ts";
import { xmlText } from "./s3_xml.ts";

/** A StoreError from an S3 request, with what a retry decision needs. */
export class S3RequestError extends StoreError {
  /** HTTP status, or null when no answer came. */
  readonly status: number | null;
  /** S3's error code (NoSuchUpload, SlowDown, …) when it sent one. */
  readonly code: string | null;
  /** Whether sending the same request again may succeed. */
  readonly retryable: boolean;

  constructor(
    failure: StoreFailure,
    message: string,
    details: { status: number | null; code: string | null; retryable: boolean; cause?: unknown },
  ) {
    super(failure, message, { cause: details.cause });
    this.name = "S3RequestError";
    this.status = details.status;
    this.code = details.code;
    this.retryable = details.retryable;
  }
}

const CREDENTIAL_CODES = new Set([
  "AccessDenied",
  "AccountProblem",
  "ExpiredToken",
  "InvalidAccessKeyId",
  "InvalidToken",
  "RequestTimeTooSkewed",
  "SignatureDoesNotMatch",
]);
const FULL_CODES = new Set([
  "EntityTooLarge",
  "InsufficientCapacity",
  "InsufficientStorage",
  "QuotaExceeded",
]);
const TRANSIENT_CODES = new Set([
  "InternalError",
  "RequestTimeout",
  "ServiceUnavailable",
  "SlowDown",
  "TooManyRequests",
]);

/** The Code and Message of an S3 error document (both null for an empty or non-XML body). */
export function parseS3Error(body: string): { code: string | null; message: string | null } {
  return { code: xmlText(body, "Code"), message: xmlText(body, "Message") || null };
}

/**
 * The failure for an error answer to `what` ("PUT staging/…"). `impliedCode`
 * stands in when the body has none (HEAD answers have no body).
 */
export function errorOfAnswer(
  what: string,
  status: number,
  body: string,
  impliedCode: string | null = null,
): S3RequestError {
  const parsed = parseS3Error(body);
  const code = parsed.code ?? impliedCode;
  const message = parsed.message;
  const said = `${status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}`;
  const details = { status, code };
  if (status === 507 || (code !== null && FULL_CODES.has(code))) {
    return new S3RequestError("full", `S3 has no room for ${what} (${said})`, {
      ...details,
      retryable: false,
    });
  }
  if (status >= 500 || status === 429 || (code !== null && TRANSIENT_CODES.has(code))) {
    return new S3RequestError("offline", `S3 could not serve ${what} (${said})`, {
      ...details,
      retryable: true,
    });
  }
  if (status === 401 || status === 403 || (code !== null && CREDENTIAL_CODES.has(code))) {
    return new S3RequestError(
      "offline",
      `S3 refused the credentials or access for ${what} (${said}); check the access key, ` +
        "secret and the bucket's policy",
      { ...details, retryable: false },
    );
  }
  if (code === "NoSuchBucket") {
    return new S3RequestError("offline", `S3 has no such bucket, for ${what} (${said})`, {
      ...details,
      retryable: false,
    });
  }
  return new S3RequestError("rejected", `S3 refused ${what} (${said})`, {
    ...details,
    retryable: false,
  });
}

/** The failure for a request that got no answer: a network error or the request timeout. */
export function errorOfNoAnswer(what: string, cause: unknown, timeoutMs: number | null) {
  const why = timeoutMs !== null
    ? `no answer within ${timeoutMs} ms`
    : (cause as Error)?.message ?? String(cause);
  return new S3RequestError("offline", `S3 did not answer ${what}: ${why}`, {
    status: null,
    code: null,
    retryable: true,
    cause,
  });
}
