/**
 * The S3 driver's one way to talk to S3: signed (SigV4, by aws4fetch),
 * path-style (`{endpoint}/{bucket}/{key}`, which every S3 answers, R2 and
 * radosgw included, without DNS per bucket), under a timeout, retried when
 * retrying can help, and with every failure mapped to a StoreError
 * (s3_errors.ts).
 *
 * Bodies are whole Uint8Arrays, never streams: Deno's fetch sends a stream
 * chunked, without Content-Length, which S3 refuses for PUT (and aws-chunked
 * signing would cost a pass over the bytes). Payloads are sent UNSIGNED-PAYLOAD:
 * hashing every part for the signature would halve upload throughput, and the
 * transport (TLS in production) already protects the bytes in flight.
 *
 * Retries: a call that got no answer, or a 5xx/429/SlowDown, is sent again
 * (attempts, default 3, with backoff), which is safe because every body is
 * buffered and every call the driver makes is idempotent but one:
 * CreateMultipartUpload, whose repeat can leave an unused upload behind, which
 * cleanup() aborts once stale. aws4fetch's own retries (10 by default) are off.
 */
import { AwsClient } from "aws4fetch";
import { sleep } from "../../../clock.ts";
import { errorOfAnswer, errorOfNoAnswer, S3RequestError } from "./s3_errors.ts";

export interface S3ClientOptions {
  /** http(s)://host[:port], without the bucket. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Bound of one attempt, until the answer's headers (and its body, for `text`). */
  requestTimeoutMs: number;
  /** Attempts per call when the failure is worth retrying (default 3). */
  attempts?: number;
}

export interface S3Call {
  method: "GET" | "HEAD" | "PUT" | "POST" | "DELETE";
  /** The object's key; absent for the bucket itself. */
  key?: string;
  /** Query parameters; "" for a bare flag (`?uploads`). */
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Uint8Array<ArrayBuffer> | string;
  /** Aborting stops the call (and a retry wait); the call throws the signal's reason. */
  signal?: AbortSignal;
  /** Error statuses returned as answers instead of thrown (404 for lookups). */
  allow?: readonly number[];
  /** Overrides the client's attempts (1 for a bounded health check). */
  attempts?: number;
  /** Overrides the client's request timeout. */
  timeoutMs?: number;
  /**
   * S3 may answer 200 and still fail, with an <Error> document as the body
   * (CopyObject, UploadPartCopy, CompleteMultipartUpload): `text` checks for it.
   */
  errorInBody?: boolean;
}

export interface S3TextAnswer {
  status: number;
  headers: Headers;
  body: string;
}

/** What aws4fetch's AwsClient offers that this module uses (the package ships no types). */
interface RequestSigner {
  sign(url: string, init: RequestInit): Promise<Request>;
}

const DEFAULT_ATTEMPTS = 3;
/** First retry after about this long, then four times longer each time. */
const RETRY_BASE_MS = 100;

export class S3Client {
  readonly bucket: string;
  readonly endpoint: string;
  readonly #signer: RequestSigner;
  readonly #timeoutMs: number;
  readonly #attempts: number;

  constructor(options: S3ClientOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, "");
    this.bucket = options.bucket;
    this.#timeoutMs = options.requestTimeoutMs;
    this.#attempts = options.attempts ?? DEFAULT_ATTEMPTS;
    this.#signer = new AwsClient({
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      region: options.region,
      service: "s3",
      retries: 0,
    }) as RequestSigner;
  }

  /**
   * The answer once its headers are in; its body is the caller's to read or
   * cancel, and no timeout applies to it (a 1 GiB GET streams for as long as
   * its reader takes). Error answers (other than `allow`ed ones) are thrown.
   */
  async open(call: S3Call): Promise<Response> {
    // The timeout ends with the attempt, that is once the headers are in.
    return await this.#retrying(call, (signal) => this.#fetch(call, signal));
  }

  /** The whole answer as text, its body read under the timeout too. */
  async text(call: S3Call): Promise<S3TextAnswer> {
    return await this.#retrying(call, async (signal) => {
      const response = await this.#fetch(call, signal);
      const body = await response.text();
      if (call.errorInBody && /<Error>/.test(body)) {
        throw errorOfAnswer(this.describe(call), response.status, body);
      }
      return { status: response.status, headers: response.headers, body };
    });
  }

  /** The value of x-amz-copy-source naming key in this bucket. */
  copySourceOf(key: string): string {
    return `/${this.bucket}/${encodeKey(key)}`;
  }

  /** "PUT pieces/bafk…" or "HEAD bucket" for messages; the store's messages name the bucket. */
  describe(call: S3Call): string {
    const flags = Object.keys(call.query ?? {}).filter((name) => name !== "uploadId");
    return `${call.method} ${call.key ?? "bucket"}${
      flags.length > 0 ? ` (${flags.join(", ")})` : ""
    }`;
  }

  async #fetch(call: S3Call, signal: AbortSignal): Promise<Response> {
    const request = await this.#signer.sign(this.#urlOf(call), {
      method: call.method,
      headers: call.headers,
      body: call.body,
    });
    const response = await fetch(request, { signal });
    if (response.ok || call.allow?.includes(response.status)) return response;
    // A 404 to a call on the bucket itself (a HEAD has no body to say so) is a missing bucket.
    const implied = call.key === undefined && response.status === 404 ? "NoSuchBucket" : null;
    throw errorOfAnswer(this.describe(call), response.status, await response.text(), implied);
  }

  #urlOf(call: S3Call): string {
    const path = call.key === undefined
      ? `/${this.bucket}`
      : `/${this.bucket}/${encodeKey(call.key)}`;
    const query = Object.entries(call.query ?? {})
      .map(([name, value]) =>
        value === "" ? name : `${encodeURIComponent(name)}=${encodeURIComponent(value)}`
      )
      .join("&");
    return `${this.endpoint}${path}${query ? `?${query}` : ""}`;
  }

  /** Runs attempt() until it succeeds, fails for good, or runs out of attempts. */
  async #retrying<T>(
    call: S3Call,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const attempts = call.attempts ?? this.#attempts;
    const timeoutMs = call.timeoutMs ?? this.#timeoutMs;
    for (let n = 1;; n++) {
      call.signal?.throwIfAborted();
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signal = call.signal ? AbortSignal.any([call.signal, timeout.signal]) : timeout.signal;
      try {
        return await attempt(signal);
      } catch (error) {
        if (call.signal?.aborted) throw call.signal.reason;
        const failure = error instanceof S3RequestError
          ? error
          : errorOfNoAnswer(this.describe(call), error, timeout.signal.aborted ? timeoutMs : null);
        if (!failure.retryable || n >= attempts) throw failure;
      } finally {
        clearTimeout(timer);
      }
      await sleep(RETRY_BASE_MS * 4 ** (n - 1) * (0.5 + Math.random() / 2), call.signal);
    }
  }
}

/**
 * Deletes key, ignoring any failure: for leftovers (a staging object) whose
 * removal must not fail what succeeded; cleanup() removes what this misses.
 */
export async function deleteQuietly(client: S3Client, key: string): Promise<void> {
  await client.text({ method: "DELETE", key, allow: [404] }).catch(() => {});
}

/** Each path segment percent-encoded; the slashes of "pieces/…" kept. */
function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}
