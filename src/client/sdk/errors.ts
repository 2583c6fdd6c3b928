/**
 * What the SDK throws, so callers can match on the kind of failure:
 *
 * - StorageError: the server answered with an error status. `code` is the
 *   stable snake_case code of the JSON error body (docs/api.md#error-codes);
 *   match on it, not on `message`.
 * - NetworkError: no answer at all (connection refused or reset, DNS), after
 *   the retries ran out.
 * - VerificationError: downloaded bytes do not match what they were promised
 *   to be (a piece's cid, the manifest's SHA-256 or sizes, a manifest that
 *   does not parse).
 *
 * An aborted operation rejects with the signal's reason, as fetch does.
 */

export class StorageError extends Error {
  override readonly name = "StorageError";
  /** HTTP status of the answer. */
  readonly status: number;
  /** The `error` field of the JSON body; for bodiless answers (HEAD), derived from the status. */
  readonly code: string;
  /** Retry-After of the answer in seconds, when it carried one. */
  readonly retryAfterSeconds?: number;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = status;
    this.code = code;
    if (options.retryAfterSeconds !== undefined) {
      this.retryAfterSeconds = options.retryAfterSeconds;
    }
  }
}

export class NetworkError extends Error {
  override readonly name = "NetworkError";
  /** Attempts made before giving up. */
  readonly attempts: number;

  constructor(message: string, options: { cause?: unknown; attempts?: number } = {}) {
    super(message, { cause: options.cause });
    this.attempts = options.attempts ?? 1;
  }
}

/** What did not match: a piece's cid, the whole file's SHA-256, a size, or the manifest itself. */
export type VerificationFailure = "cid" | "sha256" | "size" | "manifest";

export class VerificationError extends Error {
  override readonly name = "VerificationError";
  /** The cid whose bytes failed the check (the piece's, or the manifest's for sha256/manifest). */
  readonly cid: string;
  readonly failure: VerificationFailure;

  constructor(cid: string, failure: VerificationFailure, message: string) {
    super(message);
    this.cid = cid;
    this.failure = failure;
  }
}
