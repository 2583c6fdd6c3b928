/**
 * Writes one append of a resumable upload as objects under the upload's
 * prefix: full parts of `partBytes` as they fill (up to `concurrency` PUTs in
 * flight), then what is left: a part of its own when it is at least S3's
 * smallest part (5 MiB), otherwise the upload's new tail. A tail left by the
 * append before is read back first and continues in this append's first part,
 * so every part but the last is at least 5 MiB and the parts can become one
 * object by UploadPartCopy at the end (staged_parts.ts).
 *
 * The append's length is known up front (`expectedBytes`: a PATCH's
 * Content-Length, or what the upload still lacks), so each part's size is
 * known as it starts to fill, and its PUT streams while the bytes arrive
 * (streamed_put.ts): storing overlaps receiving, and the PATCH's answer waits
 * only for the last part's answer. The part's buffer still holds
 * its bytes: a streamed PUT that fails is sent again from it (retried as any
 * call), and one the body ends short of (a cut PATCH) is stopped and what
 * arrived is sent as a smaller part or tail, as without streaming.
 *
 * Keys are `<prefix><id>/<start>-<end>-<random>`: never reused, so an append
 * that is not recorded (it lost a race, the process died) overwrites nothing
 * that is; `abort` deletes what it wrote, and the orphan sweep what a crash left.
 */
import { StoreError } from "../driver.ts";
import { MIN_PART_BYTES } from "./multipart_api.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";
import { StreamedPut } from "./streamed_put.ts";

/** A part this small is sent once whole: streaming it would save little. */
const STREAM_FROM_BYTES = 1024 * 1024;

/** One object of a partial upload: bytes [start, start + size) of it. */
export interface PartObject {
  key: string;
  start: number;
  size: number;
}

export interface PartialWriterOptions {
  client: S3Client;
  /** `<partial prefix><upload id>/`. */
  prefix: string;
  /** The upload offset this writer's first byte (the old tail's included) has. */
  start: number;
  partBytes: number;
  concurrency: number;
  /**
   * The bytes this writer expects, the old tail's included (at most: a body may end short),
   * which sets each part's size as it starts to fill.
   */
  expectedBytes: number;
  signal?: AbortSignal;
}

export class PartialWriter {
  readonly #options: PartialWriterOptions;
  readonly #sealed: PartObject[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  /** Keys PUT (or being PUT) by this writer, for abort. */
  readonly #written: string[] = [];
  /** Buffers of parts S3 has taken, for the next parts to fill. */
  readonly #spare: Uint8Array<ArrayBuffer>[] = [];
  #buffer: Uint8Array<ArrayBuffer>;
  #filled = 0;
  #next: number;
  #tail: PartObject | null = null;
  #failure: { error: unknown } | null = null;
  /** The PUT streaming the part being filled, if it streams. */
  #streaming: StreamedPut | null = null;
  /** Bytes still expected. */
  #expectedLeft: number;

  constructor(options: PartialWriterOptions) {
    this.#options = options;
    this.#next = options.start;
    this.#expectedLeft = options.expectedBytes;
    this.#buffer = new Uint8Array(options.partBytes);
  }

  /** Full parts this append sealed, in order. */
  get parts(): readonly PartObject[] {
    return this.#sealed;
  }

  /** The upload's tail after this append (fewer than 5 MiB), or null. */
  get tail(): PartObject | null {
    return this.#tail;
  }

  /** Takes a copy of chunk; resolves once there is room for the next. */
  async write(chunk: Uint8Array): Promise<void> {
    this.#throwIfFailed();
    for (let offset = 0; offset < chunk.byteLength;) {
      if (this.#filled === 0) this.#startStreaming();
      const take = Math.min(chunk.byteLength - offset, this.#buffer.byteLength - this.#filled);
      this.#buffer.set(chunk.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      this.#expectedLeft -= take;
      offset += take;
      this.#streaming?.advance(this.#filled);
      if (this.#filled === this.#buffer.byteLength) await this.#send(false);
    }
  }

  /** Sends what is left (a part, or the new tail) and waits for every PUT. */
  async finish(): Promise<void> {
    if (this.#filled > 0) await this.#send(this.#filled < MIN_PART_BYTES);
    await Promise.all(this.#inFlight);
    this.#throwIfFailed();
  }

  /** After a failure: waits for the PUTs in flight and deletes everything this writer wrote. */
  async abort(): Promise<void> {
    this.#streaming?.stop();
    await this.#streaming?.done;
    await Promise.all(this.#inFlight);
    await Promise.all(this.#written.map((key) => deleteQuietly(this.#options.client, key)));
  }

  async #send(asTail: boolean): Promise<void> {
    while (this.#inFlight.size >= this.#options.concurrency) await Promise.race(this.#inFlight);
    this.#throwIfFailed();
    const body = this.#buffer.subarray(0, this.#filled);
    const streamed = this.#streaming;
    this.#streaming = null;
    const whole = streamed?.size === this.#filled;
    // A body that ended short of the streamed part's size: that PUT cannot end, what arrived is sent.
    if (!whole) streamed?.stop();
    const part: PartObject = {
      key: whole ? streamed.key : this.#keyOf(this.#filled),
      start: this.#next,
      size: this.#filled,
    };
    if (asTail) this.#tail = part;
    else this.#sealed.push(part);
    this.#next += this.#filled;
    if (!whole) this.#written.push(part.key);
    const buffer = this.#buffer;
    this.#buffer = this.#spare.pop() ?? new Uint8Array(this.#options.partBytes);
    this.#filled = 0;
    const { client, signal } = this.#options;
    const stored = whole
      ? streamed.done
      : streamed?.done.then(() => false) ?? Promise.resolve(false);
    const sending: Promise<void> = stored
      .then((done) =>
        done ? undefined : client.text({ method: "PUT", key: part.key, body, signal })
      )
      .then(
        () => void this.#spare.push(buffer),
        (error) => void (this.#failure ??= { error }),
      )
      .finally(() => this.#inFlight.delete(sending));
    this.#inFlight.add(sending);
  }

  /** A new part starts filling: its PUT streams when it is big enough to be worth it. */
  #startStreaming(): void {
    const size = Math.min(this.#buffer.byteLength, this.#expectedLeft);
    if (size < STREAM_FROM_BYTES) return;
    const key = this.#keyOf(size);
    // Written from now on: S3 may store it before this writer is done, or aborted.
    this.#written.push(key);
    this.#streaming = new StreamedPut({
      client: this.#options.client,
      key,
      source: this.#buffer,
      size,
    });
  }

  #keyOf(size: number): string {
    return `${this.#options.prefix}${this.#next}-${this.#next + size}-${nonce()}`;
  }

  #throwIfFailed(): void {
    if (!this.#failure) return;
    const { error } = this.#failure;
    throw error instanceof StoreError ? error : new StoreError(
      "rejected",
      `Storage refused a part of the upload: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

function nonce(): string {
  return crypto.randomUUID().slice(0, 8);
}
