/**
 * Where the S3 driver's `stage` writes an upload's bytes: one staging object,
 * written whole or not at all.
 *
 * A body of at most one part is kept in one buffer of its declared length and
 * sent as one PutObject once complete. A longer one is a multipart upload:
 * bytes are copied into part-sized buffers, each full buffer is sent as a part
 * while the next fills, with at most `partConcurrency` parts in flight; a body
 * that outruns S3 waits for a free slot (the write's promise), which holds
 * the body pump and so the client's upload. Memory per upload is therefore
 * about partSizeBytes × (partConcurrency + 1), plus the pump's read buffers;
 * buffers of finished parts are reused. Parts are sent again on failures worth
 * retrying (s3_client.ts): they are buffered, so that is safe.
 *
 * The upload is completed only once exactly expectedBytes were sent. On any
 * failure `abort` stops the parts in flight, aborts the multipart upload and
 * deletes a staging object that may exist, so nothing is left behind; what a
 * crash leaves anyway, cleanup() removes once stale.
 */
import { StoreError } from "../driver.ts";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  MAX_PARTS,
  uploadPart,
} from "./multipart_api.ts";
import type { CompletedPart, UploadTarget } from "./multipart_api.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";

const MIB = 1024 * 1024;

export interface StagingWriterOptions {
  client: S3Client;
  /** The staging object's key. */
  key: string;
  expectedBytes: number;
  partSizeBytes: number;
  partConcurrency: number;
  /** The stage's caller signal: aborting stops every request in flight. */
  signal?: AbortSignal;
}

export interface StagingWriter {
  /** Takes a copy of chunk; resolves once there is room for the next one. */
  write(chunk: Uint8Array): Promise<void>;
  /** Sends what is left and makes the staging object whole: exactly expectedBytes. */
  finish(): Promise<void>;
  /** After a failure: stops what is in flight and removes what was written. Never throws. */
  abort(): Promise<void>;
}

/** One PutObject for a body of at most one part; a multipart upload for a longer one. */
export function createStagingWriter(options: StagingWriterOptions): StagingWriter {
  return options.expectedBytes <= options.partSizeBytes
    ? new SinglePutWriter(options)
    : new MultipartWriter(options);
}

/** The part size for a body: the configured one, or larger (whole MiB) to stay in MAX_PARTS. */
export function partSizeFor(expectedBytes: number, partSizeBytes: number): number {
  const needed = Math.ceil(expectedBytes / MAX_PARTS / MIB) * MIB;
  return Math.max(partSizeBytes, needed);
}

function incomplete(sent: number, expected: number): StoreError {
  return new StoreError("short_body", `Cannot store upload: got ${sent} of ${expected} bytes`);
}

class SinglePutWriter implements StagingWriter {
  readonly #options: StagingWriterOptions;
  readonly #buffer: Uint8Array<ArrayBuffer>;
  #filled = 0;
  /** Once the PUT is sent, an object may exist even if the answer never came. */
  #sent = false;

  constructor(options: StagingWriterOptions) {
    this.#options = options;
    this.#buffer = new Uint8Array(options.expectedBytes);
  }

  write(chunk: Uint8Array): Promise<void> {
    // The pump refuses bytes beyond expectedBytes before they get here.
    this.#buffer.set(chunk, this.#filled);
    this.#filled += chunk.byteLength;
    return Promise.resolve();
  }

  async finish(): Promise<void> {
    if (this.#filled !== this.#options.expectedBytes) {
      throw incomplete(this.#filled, this.#options.expectedBytes);
    }
    this.#sent = true;
    await this.#options.client.text({
      method: "PUT",
      key: this.#options.key,
      body: this.#buffer,
      signal: this.#options.signal,
    });
  }

  async abort(): Promise<void> {
    if (!this.#sent) return;
    await deleteQuietly(this.#options.client, this.#options.key);
  }
}

class MultipartWriter implements StagingWriter {
  readonly #options: StagingWriterOptions;
  readonly #partSize: number;
  /** Started at once, so it overlaps the first part's bytes arriving; see `abort`. */
  readonly #target: Promise<UploadTarget>;
  /** Stops the parts in flight: on the caller's abort, or on this writer's first failure. */
  readonly #halt = new AbortController();
  readonly #signal: AbortSignal;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #parts: CompletedPart[] = [];
  /** Buffers of parts S3 has taken, for the next parts to fill. */
  readonly #spare: Uint8Array<ArrayBuffer>[] = [];
  #buffer: Uint8Array<ArrayBuffer> | null = null;
  #filled = 0;
  #nextPartNumber = 1;
  #sentBytes = 0;
  /** The first failure of a part; later ones are usually its consequences. */
  #failure: { error: unknown } | null = null;
  #completing = false;

  constructor(options: StagingWriterOptions) {
    this.#options = options;
    this.#partSize = partSizeFor(options.expectedBytes, options.partSizeBytes);
    this.#signal = options.signal
      ? AbortSignal.any([options.signal, this.#halt.signal])
      : this.#halt.signal;
    // Not under the signal: an upload S3 created must be known, so `abort` can abort it.
    this.#target = createMultipartUpload(options.client, options.key);
    this.#target.catch(() => {});
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.#throwIfFailed();
    let offset = 0;
    while (offset < chunk.byteLength) {
      this.#buffer ??= this.#spare.pop() ?? new Uint8Array(this.#partSize);
      const take = Math.min(chunk.byteLength - offset, this.#partSize - this.#filled);
      this.#buffer.set(chunk.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === this.#partSize) await this.#sendBuffer();
    }
  }

  async finish(): Promise<void> {
    this.#throwIfFailed();
    if (this.#filled > 0) await this.#sendBuffer();
    // Part promises never reject: failures land in #failure.
    await Promise.all(this.#inFlight);
    this.#throwIfFailed();
    if (this.#sentBytes !== this.#options.expectedBytes) {
      throw incomplete(this.#sentBytes, this.#options.expectedBytes);
    }
    this.#completing = true;
    await completeMultipartUpload(this.#options.client, await this.#target, {
      parts: this.#parts,
      expectedBytes: this.#options.expectedBytes,
      signal: this.#signal,
    });
  }

  async abort(): Promise<void> {
    this.#halt.abort(new Error("the staging upload was stopped"));
    await Promise.all(this.#inFlight);
    const target = await this.#target.catch(() => null);
    // Without a target (S3 never answered the start), cleanup() aborts the upload once stale.
    if (target) await abortMultipartUpload(this.#options.client, target).catch(() => {});
    // A completion whose answer was lost may have made the object.
    if (this.#completing) await deleteQuietly(this.#options.client, this.#options.key);
  }

  /** Sends the current buffer as the next part once a slot is free. */
  async #sendBuffer(): Promise<void> {
    while (this.#inFlight.size >= this.#options.partConcurrency) {
      await Promise.race(this.#inFlight);
    }
    this.#throwIfFailed();
    const buffer = this.#buffer!;
    const body = buffer.subarray(0, this.#filled);
    const partNumber = this.#nextPartNumber++;
    this.#sentBytes += this.#filled;
    this.#buffer = null;
    this.#filled = 0;
    const sending: Promise<void> = this.#target
      .then((target) =>
        uploadPart(this.#options.client, target, { partNumber, body, signal: this.#signal })
      )
      .then(
        (part) => {
          this.#parts.push(part);
          this.#spare.push(buffer);
        },
        (error) => {
          this.#failure ??= { error };
          this.#halt.abort(error);
        },
      )
      .finally(() => this.#inFlight.delete(sending));
    this.#inFlight.add(sending);
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure.error;
  }
}
