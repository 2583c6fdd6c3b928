/**
 * The S3 driver's one way to talk to S3: signed (SigV4, by aws4fetch),
 * path-style (`{endpoint}/{bucket}/{key}`, which every S3 answers, R2 and
 * radosgw included, without DNS per bucket), under a timeout, retried when
 * retrying can help, and with every failure mapped to a StoreError
 * (s3_errors.ts).
 *
 * Bodies are whole Uint8Arrays, never streams: Deno's fetch sends a stream
 * chunked, without Content-Length, which S3 refuses for PUT (and aws-chunked
 * signing would cost a pass over the bytes). The one PUT that streams (a
 * resumable upload's part, as its PATCH arrives) goes through node:http
 * instead (streamed_put.ts), signed here by `signed`. Payloads are sent UNSIGNED-PAYLOAD:
 * hashing every part for the signature would halve upload throughput, and the
 * transport (TLS in production) already protects the bytes in flight.
 *
 * Deadlines: each attempt has `requestTimeoutMs` to its answer's headers
 * (and its whole body, for `text`); on top, the bucket's liveness
 * (src/kernel/liveness.ts) stops whatever waits on a bucket that has gone silent
 * within a few seconds, and fails calls at once while it stays offline, so
 * a silent or refusing bucket is a fast "offline" failure, never a hang.
 *
 * Retries: a call that got no answer, or a 5xx/429/SlowDown, is sent again
 * (attempts, default 3, with backoff) while the bucket is not offline, which
 * is safe because every body is buffered and every call the driver makes is
 * idempotent but one: CreateMultipartUpload, whose repeat can leave an unused
 * upload behind, which cleanup() aborts. aws4fetch's own retries (10 by
 * default) are off.
 */
import { AwsClient } from "aws4fetch";
import { sleep } from "../../kernel/clock.ts";
import { Liveness } from "../../kernel/liveness.ts";
import type { LivenessOptions } from "../../kernel/liveness.ts";
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
  /** How silence is judged (tests shorten it); see liveness.ts. */
  liveness?: Pick<LivenessOptions, "silenceMs" | "probeTimeoutMs" | "recheckMs">;
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
  /** Whether the bucket answers at all: calls fail fast while it does not. */
  readonly liveness: Liveness;

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
    this.liveness = new Liveness({
      ...options.liveness,
      where: `bucket ${this.bucket} at ${this.endpoint}`,
      probe: (signal) => this.#answers(signal),
      failure: (message) =>
        new S3RequestError("offline", `S3 is offline: ${message}`, {
          status: null,
          code: null,
          retryable: false,
        }),
    });
  }

  /**
   * The answer once its headers are in; its body is the caller's to read or
   * cancel, and no timeout applies to it (a 1 GiB GET streams for as long as
   * its reader takes). Error answers (other than `allow`ed ones) are thrown.
   */
  async open(call: S3Call): Promise<Response> {
    // The timeout ends with the attempt, that is once the headers are in; the body's reads
    // are watched for silence (and stopped with the rest if the bucket goes offline).
    return await this.#retrying(call, async (signal, halt) => {
      const response = await this.#fetch(call, signal);
      if (response.body === null) return response;
      return new Response(watchedBody(response.body, this.liveness, halt), response);
    });
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

  /** Throws the offline failure at once while the bucket is known not to answer. */
  async admit(): Promise<void> {
    await this.liveness.admit();
  }

  /** The value of x-amz-copy-source naming key in this bucket. */
  copySourceOf(key: string): string {
    return `/${this.bucket}/${encodeKey(key)}`;
  }

  /**
   * The URL and signed headers of a call whose body is sent by other means
   * (streamed_put.ts): signed UNSIGNED-PAYLOAD, as every call is.
   */
  async signed(call: S3Call): Promise<{ url: string; headers: Headers }> {
    const request = await this.#signer.sign(this.#urlOf(call), {
      method: call.method,
      headers: call.headers,
    });
    return { url: request.url, headers: request.headers };
  }

  /** The bound of one attempt, to its answer. */
  get requestTimeoutMs(): number {
    return this.#timeoutMs;
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
    this.liveness.answered();
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

  /** Whether the bucket sends any answer (a HEAD of the bucket) before the signal aborts. */
  async #answers(signal: AbortSignal): Promise<boolean> {
    const request = await this.#signer.sign(this.#urlOf({ method: "HEAD" }), { method: "HEAD" });
    const response = await fetch(request, { signal });
    await response.body?.cancel();
    return true;
  }

  /**
   * Runs attempt() until it succeeds, fails for good, runs out of attempts or
   * finds the bucket offline. `halt` stops the attempt (and, for `open`, its
   * body) when the bucket goes silent.
   */
  async #retrying<T>(
    call: S3Call,
    attempt: (signal: AbortSignal, halt: AbortController) => Promise<T>,
  ): Promise<T> {
    const attempts = call.attempts ?? this.#attempts;
    const timeoutMs = call.timeoutMs ?? this.#timeoutMs;
    for (let n = 1;; n++) {
      call.signal?.throwIfAborted();
      await this.liveness.admit();
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const halt = new AbortController();
      const signals = [timeout.signal, halt.signal, ...(call.signal ? [call.signal] : [])];
      const stopWaiting = this.liveness.waiting(halt);
      try {
        return await attempt(AbortSignal.any(signals), halt);
      } catch (error) {
        if (call.signal?.aborted) throw call.signal.reason;
        if (halt.signal.aborted) throw halt.signal.reason;
        const failure = error instanceof S3RequestError
          ? error
          : errorOfNoAnswer(this.describe(call), error, timeout.signal.aborted ? timeoutMs : null);
        if (failure.status === null) this.liveness.suspect(failure.message);
        if (!failure.retryable || n >= attempts) throw failure;
      } finally {
        clearTimeout(timer);
        stopWaiting();
      }
      await sleep(RETRY_BASE_MS * 4 ** (n - 1) * (0.5 + Math.random() / 2), call.signal);
    }
  }
}

/**
 * A body as it streams from S3, each read watched for silence: a read the
 * bucket leaves unanswered is stopped (`halt`) with the others when it goes
 * offline, so a retrieval cut off mid-body fails instead of hanging.
 */
function watchedBody(
  body: ReadableStream<Uint8Array>,
  liveness: Liveness,
  halt: AbortController,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  // The read itself is raced against `halt`: the fetch's signal stops the body too, but a
  // read that waits on a silent socket must end whatever the transport does.
  let onHalt: () => void = () => {};
  const halted = new Promise<never>((_, reject) => {
    onHalt = () => reject(halt.signal.reason);
    halt.signal.addEventListener("abort", onHalt, { once: true });
  });
  halted.catch(() => {});
  const release = () => halt.signal.removeEventListener("abort", onHalt);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const stopWaiting = liveness.waiting(halt);
      try {
        const { done, value } = await Promise.race([reader.read(), halted]);
        if (done) {
          release();
          controller.close();
        } else {
          liveness.answered();
          controller.enqueue(value);
        }
      } catch (error) {
        release();
        reader.cancel(error).catch(() => {});
        throw error;
      } finally {
        stopWaiting();
      }
    },
    cancel: (reason) => {
      release();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
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
