/**
 * The S3 driver ("r2" source by default): pieces as objects of one bucket,
 * `<keyPrefix><cid>`, on any S3 that speaks SigV4 and path-style URLs
 * (Cloudflare R2, Ceph radosgw, AWS). Passes the same conformance suite as the
 * disk driver (tests/conformance/store_conformance.ts).
 *
 * Write path: `stage` pumps the body (body_pump.ts: declared length, stalls,
 * abort, SHA-256, onChunk, exactly as on disk) into a staging object,
 * `<stagingPrefix><uuid>`: one PutObject, or a multipart upload for bodies
 * over one part (staging_writer.ts, which also says what memory that takes).
 * Any failure aborts the upload and deletes the staging object. `commit`
 * makes the piece visible only then, with a server-side copy to its key
 * (CopyObject; UploadPartCopy parts above 5 GiB) and deletes the staging object.
 *
 * Memory: a body of up to one part is buffered whole; a longer one takes
 * about partSizeBytes × (partConcurrency + 1) while it uploads (40 MiB with
 * the defaults), whatever its size.
 *
 * Why stage-then-copy rather than uploading to the piece's key at once: a
 * piece key must only ever hold bytes the caller accepted (its cid checked,
 * not a conflict), and an object appears the moment its upload completes.
 * The copy stays inside S3: no byte crosses the network again (radosgw even
 * shares the data and copies only the first 4 MiB; about 70 ms per 100 MiB,
 * under a tenth of the upload, in scripts/bench_s3.ts).
 *
 * Failure modes and who cleans up (staging_leftovers.ts says when what goes):
 *   - crash mid-upload: an incomplete multipart upload (or nothing) under the
 *     staging prefix; cleanup() aborts it once its writer is known dead, or
 *     once older than staleUploadMs;
 *   - crash after the copy, before the staging delete: a staging object next
 *     to the committed piece; cleanup() deletes it the same way;
 *   - an abort or delete that failed (the bucket was away): this process's
 *     own leftover, which cleanup() removes on its next run;
 *   - crash before the copy completes: no piece, and the catalog only records
 *     a piece after commit returns, so nothing points at a missing object.
 * Ages are judged by S3's own timestamps against this process's clock.
 *
 * A bucket that stops answering is found within seconds (src/kernel/liveness.ts):
 * calls then fail at once as "offline" until it answers again.
 */
import { assertSafeKey } from "../disk/layout.ts";
import { bytesInRange, StoreError } from "../driver.ts";
import type {
  ByteRange,
  CleanupOptions,
  OpenedPiece,
  PartialStore,
  PieceStat,
  PieceStore,
  StagedPiece,
  StageOptions,
  StoreHealth,
} from "../driver.ts";
import { pumpBody } from "../body_pump.ts";
import { systemClock } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import { MIN_PART_BYTES, sizeOf } from "./multipart_api.ts";
import { listObjects } from "./object_listing.ts";
import { sha256OfObject } from "./object_sha256.ts";
import { S3Partials } from "./partial_objects.ts";
import { S3Client } from "./s3_client.ts";
import type { S3ClientOptions } from "./s3_client.ts";
import { removeStagingLeftovers, stagingKeyOf } from "./staging_leftovers.ts";
import { DEFAULT_COPY_LIMITS } from "./server_side_copy.ts";
import type { CopyLimits } from "./server_side_copy.ts";
import { StagedObject } from "./staged_object.ts";
import { createStagingWriter } from "./staging_writer.ts";

const MIB = 1024 * 1024;
const HOUR_MS = 3_600_000;

export const S3_STORE_DEFAULTS = {
  source: "r2",
  /**
   * 8 MiB: against radosgw, 100 MiB uploads ran alike with 5 to 12 MiB parts and
   * slower with 16 and 32 (scripts/bench_s3.ts --part-sizes); larger parts cost
   * memory, smaller ones cost a request each, which counts on a distant S3 (R2).
   */
  partSizeBytes: 8 * MIB,
  partConcurrency: 4,
  keyPrefix: "pieces/",
  stagingPrefix: "staging/",
  partialPrefix: "partial/",
  staleUploadMs: 24 * HOUR_MS,
  requestTimeoutMs: 30_000,
} as const;

/** /healthz must answer promptly: a bucket that does not answer a HEAD in 2 s counts as offline. */
const CHECK_TIMEOUT_MS = 2000;

export interface S3StoreOptions {
  /** http(s)://host[:port] of the S3 API, without the bucket (path-style addressing). */
  endpoint: string;
  /** The SigV4 region ("auto" for R2). */
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The X-Service-Source header value (default "r2"). */
  source?: string;
  /**
   * Bytes per multipart part, at least 5 MiB (S3's minimum); a body of at most
   * one part is one PutObject. Default 8 MiB. Memory per upload in flight is
   * about partSizeBytes × (partConcurrency + 1).
   */
  partSizeBytes?: number;
  /** Parts of one upload in flight at once (default 4). */
  partConcurrency?: number;
  /** Where committed pieces live (default "pieces/"); must not overlap stagingPrefix. */
  keyPrefix?: string;
  /** Where uploads are staged (default "staging/"); cleanup() owns everything under it. */
  stagingPrefix?: string;
  /** Where resumable uploads' bytes live until they finish or expire (default "partial/"). */
  partialPrefix?: string;
  /** cleanup() removes staging uploads and objects older than this (default 24 h). */
  staleUploadMs?: number;
  /** Bound of one S3 request until its answer's headers (default 30 s); retries get their own. */
  requestTimeoutMs?: number;
  /** How a silent bucket is found (tests shorten it; see src/kernel/liveness.ts). */
  liveness?: S3ClientOptions["liveness"];
  /**
   * This process's name in its staging keys (`staging/<writer>/<uuid>`): the
   * instance id with PostgreSQL, so cleanup() can tell a dead instance's
   * leftovers (default: a random id).
   */
  writer?: string;
  /** The clock cleanup() judges staleness by (tests move it instead of waiting a day). */
  clock?: Clock;
  /** Server-side copy limits (tests lower them to exercise the multipart copy). */
  copyLimits?: Partial<CopyLimits>;
}

export class S3Store implements PieceStore {
  readonly source: string;
  readonly #client: S3Client;
  readonly #where: string;
  readonly #keyPrefix: string;
  readonly #stagingPrefix: string;
  readonly #partSizeBytes: number;
  readonly #partConcurrency: number;
  readonly #staleUploadMs: number;
  readonly #requestTimeoutMs: number;
  readonly #clock: Clock;
  readonly #copyLimits: CopyLimits;
  readonly #writer: string;
  /** Staging keys of this process's uploads from their start until they settle. */
  readonly #inUse = new Set<string>();
  readonly partials: PartialStore;

  constructor(options: S3StoreOptions) {
    const defaults = S3_STORE_DEFAULTS;
    this.source = options.source ?? defaults.source;
    this.#keyPrefix = options.keyPrefix ?? defaults.keyPrefix;
    this.#stagingPrefix = options.stagingPrefix ?? defaults.stagingPrefix;
    const partialPrefix = options.partialPrefix ?? defaults.partialPrefix;
    // Overlapping, list() would show staging objects and cleanup() would delete pieces (or
    // resumable uploads still in progress).
    assertApart({ keyPrefix: this.#keyPrefix, stagingPrefix: this.#stagingPrefix, partialPrefix });
    this.#partSizeBytes = options.partSizeBytes ?? defaults.partSizeBytes;
    if (this.#partSizeBytes < MIN_PART_BYTES) {
      throw new RangeError(`S3 partSizeBytes must be at least ${MIN_PART_BYTES} (S3's minimum)`);
    }
    this.#partConcurrency = Math.max(1, options.partConcurrency ?? defaults.partConcurrency);
    this.#staleUploadMs = options.staleUploadMs ?? defaults.staleUploadMs;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? defaults.requestTimeoutMs;
    this.#clock = options.clock ?? systemClock;
    this.#copyLimits = {
      ...DEFAULT_COPY_LIMITS,
      concurrency: this.#partConcurrency,
      ...options.copyLimits,
    };
    this.#client = new S3Client({
      endpoint: options.endpoint,
      region: options.region,
      bucket: options.bucket,
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      requestTimeoutMs: this.#requestTimeoutMs,
      liveness: options.liveness,
    });
    this.#where = `bucket ${options.bucket} at ${this.#client.endpoint}`;
    this.#writer = options.writer ?? crypto.randomUUID();
    if (!/^[A-Za-z0-9-]+$/.test(this.#writer)) {
      throw new RangeError(`S3 writer "${this.#writer}" must be letters, digits and dashes`);
    }
    this.partials = new S3Partials({
      client: this.#client,
      prefix: partialPrefix,
      partSizeBytes: this.#partSizeBytes,
      partConcurrency: this.#partConcurrency,
      pieceKeyOf: (key) => this.#pieceKeyOf(key),
      copyLimits: this.#copyLimits,
    });
  }

  /** Whether the bucket answers, bounded: while it is known offline, at once (no request). */
  async check(): Promise<StoreHealth> {
    try {
      const response = await this.#client.open({
        method: "HEAD",
        attempts: 1,
        timeoutMs: Math.min(this.#requestTimeoutMs, CHECK_TIMEOUT_MS),
      });
      await response.body?.cancel();
      return { ok: true, detail: `${this.#where} answers` };
    } catch (error) {
      return { ok: false, detail: `Cannot use ${this.#where}: ${(error as Error).message}` };
    }
  }

  async stat(key: string): Promise<PieceStat | null> {
    const response = await this.#client.open({
      method: "HEAD",
      key: this.#pieceKeyOf(key),
      allow: [404],
    });
    await response.body?.cancel();
    if (response.status === 404) return null;
    const modified = Date.parse(response.headers.get("last-modified") ?? "");
    // An unknown age counts as new: an orphan is removed only once known to be old.
    return {
      size: sizeOf(response.headers),
      modifiedAt: Number.isNaN(modified) ? Date.now() : modified,
    };
  }

  async open(key: string, range?: ByteRange): Promise<OpenedPiece | null> {
    if (range !== undefined) bytesInRange(range, Number.MAX_SAFE_INTEGER);
    const response = await this.#client.open({
      method: "GET",
      key: this.#pieceKeyOf(key),
      // A ranged GET: S3 sends only these bytes (206), cut at the object's end.
      headers: range && { range: `bytes=${range.offset}-${range.offset + range.length - 1}` },
      allow: [404, 416],
    });
    if (response.status === 404 || response.status === 416) {
      await response.body?.cancel();
      if (response.status === 404) return null;
      throw new RangeError(`Cannot read ${key} at ${range?.offset}: it is not that long`);
    }
    if (range !== undefined && response.status !== 206) {
      // An S3 that ignores Range would send the whole object: never pass that off as the range.
      await response.body?.cancel();
      throw new StoreError("offline", `${this.#where} answered a ranged GET with the whole object`);
    }
    // The body streams from S3 as the caller reads it.
    return { size: wholeSizeOf(response), body: response.body! };
  }

  async sha256Of(key: string, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    return await sha256OfObject(this.#client, this.#pieceKeyOf(key), options.signal);
  }

  async stage(body: ReadableStream<Uint8Array>, options: StageOptions): Promise<StagedPiece> {
    // A bucket known offline refuses before a byte of the body is read (or buffered).
    await this.#client.admit().catch(async (error) => {
      await body.cancel().catch(() => {});
      throw error;
    });
    const stagingKey = stagingKeyOf(this.#stagingPrefix, this.#writer);
    this.#inUse.add(stagingKey);
    const settled = () => this.#inUse.delete(stagingKey);
    const writer = createStagingWriter({
      client: this.#client,
      key: stagingKey,
      expectedBytes: options.expectedBytes,
      partSizeBytes: this.#partSizeBytes,
      partConcurrency: this.#partConcurrency,
      signal: options.signal,
    });
    let pumped;
    try {
      pumped = await pumpBody(body, options, (chunk) => writer.write(chunk));
      await writer.finish();
    } catch (error) {
      await writer.abort();
      settled();
      throw stageFailure(error, options.signal);
    }
    return new StagedObject({
      client: this.#client,
      stagingKey,
      ...pumped,
      pieceKeyOf: (key) => this.#pieceKeyOf(key),
      copyLimits: this.#copyLimits,
      settled,
    });
  }

  async delete(key: string): Promise<boolean> {
    const objectKey = this.#pieceKeyOf(key);
    const head = await this.#client.open({ method: "HEAD", key: objectKey, allow: [404] });
    await head.body?.cancel();
    if (head.status === 404) return false;
    await this.#client.text({ method: "DELETE", key: objectKey, allow: [404] });
    return true;
  }

  async *list(): AsyncIterable<string> {
    for await (const object of listObjects(this.#client, this.#keyPrefix)) {
      const key = object.key.slice(this.#keyPrefix.length);
      // Objects someone else put under the prefix are no pieces (open() would refuse their keys).
      if (isPieceKey(key)) yield key;
    }
  }

  async cleanup(options: CleanupOptions = {}): Promise<{ removedTemporaryFiles: number }> {
    const removed = await removeStagingLeftovers({
      client: this.#client,
      stagingPrefix: this.#stagingPrefix,
      writer: this.#writer,
      inUse: this.#inUse,
      staleBefore: this.#clock.now() - this.#staleUploadMs,
    }, options);
    return { removedTemporaryFiles: removed };
  }

  #pieceKeyOf(key: string): string {
    // Keys are canonical cids, as on disk: nothing else may become an object key.
    assertSafeKey(key);
    return `${this.#keyPrefix}${key}`;
  }
}

/** The object's size: a 206's Content-Range says it (`bytes a-b/size`), a 200's length is it. */
function wholeSizeOf(response: Response): number {
  const total = /\/(\d+)$/.exec(response.headers.get("content-range") ?? "");
  return response.status === 206 && total ? Number(total[1]) : sizeOf(response.headers);
}

/** The bucket's prefixes must not contain each other. */
function assertApart(prefixes: Record<string, string>): void {
  const entries = Object.entries(prefixes);
  for (const [name, prefix] of entries) {
    for (const [otherName, other] of entries) {
      if (name !== otherName && prefix.startsWith(other)) {
        throw new RangeError(`S3 ${name} "${prefix}" and ${otherName} "${other}" overlap`);
      }
    }
  }
}

function isPieceKey(key: string): boolean {
  try {
    assertSafeKey(key);
    return true;
  } catch {
    return false;
  }
}

/** A failed stage's error: the pump's and S3's as they are; an abort mid-request is short_body. */
function stageFailure(error: unknown, signal: AbortSignal | undefined): StoreError {
  if (error instanceof StoreError) return error;
  if (signal?.aborted) {
    return new StoreError("short_body", "Cannot store upload: it was aborted", { cause: error });
  }
  return new StoreError("rejected", `Storage refused the piece: ${(error as Error).message}`, {
    cause: error,
  });
}
