/**
 * Writes one append of a resumable upload as objects under the upload's
 * prefix: full parts of `partBytes` as they fill (up to `concurrency` PUTs in
 * flight), then what is left: a part of its own when it is at least S3's
 * smallest part (5 MiB), otherwise the upload's new tail. A tail left by the
 * append before is read back first and continues in this append's first part,
 * so every part but the last is at least 5 MiB and the parts can become one
 * object by UploadPartCopy at the end (staged_parts.ts).
 *
 * Keys are `<prefix><id>/<start>-<end>-<random>`: never reused, so an append
 * that is not recorded (it lost a race, the process died) overwrites nothing
 * that is; `abort` deletes what it wrote, and the orphan sweep what a crash left.
 */
import { StoreError } from "../driver.ts";
import { MIN_PART_BYTES } from "./multipart_api.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";

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

  constructor(options: PartialWriterOptions) {
    this.#options = options;
    this.#next = options.start;
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
      const take = Math.min(chunk.byteLength - offset, this.#buffer.byteLength - this.#filled);
      this.#buffer.set(chunk.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
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
    await Promise.all(this.#inFlight);
    await Promise.all(this.#written.map((key) => deleteQuietly(this.#options.client, key)));
  }

  async #send(asTail: boolean): Promise<void> {
    while (this.#inFlight.size >= this.#options.concurrency) await Promise.race(this.#inFlight);
    this.#throwIfFailed();
    const body = this.#buffer.subarray(0, this.#filled);
    const part: PartObject = {
      key: `${this.#options.prefix}${this.#next}-${this.#next + this.#filled}-${nonce()}`,
      start: this.#next,
      size: this.#filled,
    };
    if (asTail) this.#tail = part;
    else this.#sealed.push(part);
    this.#next += this.#filled;
    this.#written.push(part.key);
    const buffer = this.#buffer;
    this.#buffer = this.#spare.pop() ?? new Uint8Array(this.#options.partBytes);
    this.#filled = 0;
    const sending: Promise<void> = this.#options.client
      .text({ method: "PUT", key: part.key, body, signal: this.#options.signal })
      .then(
        () => void this.#spare.push(buffer),
        (error) => void (this.#failure ??= { error }),
      )
      .finally(() => this.#inFlight.delete(sending));
    this.#inFlight.add(sending);
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
