/**
 * Resumable uploads in the bucket, as objects under `<partialPrefix><id>/`
 * (partial_writer.ts says how an append becomes objects). The state the
 * database keeps lists them: sealed parts of at least 5 MiB, and a tail of
 * fewer that the next append reads back and continues. Why objects and not
 * one multipart upload whose parts are the appends: a client chooses its
 * PATCH sizes (a cut PATCH ends anywhere), S3 parts but the last must be
 * 5 MiB or more, and the parts of an unfinished multipart upload cannot be
 * read back, which an instance that did not see the earlier bytes (a restart,
 * another instance) needs to rebuild the cid check's hash. Objects can be
 * read, and joined by UploadPartCopy at the end (staged_parts.ts; one object:
 * one CopyObject, as a staged upload).
 *
 * The prefix is not the staging prefix: cleanup() removes staging objects a
 * day old, and a resumable upload may live longer than that while its bytes
 * keep coming.
 */
import { StoreError } from "../driver.ts";
import type {
  AppendOptions,
  AppendResult,
  PartialState,
  PartialStore,
  StagedPiece,
} from "../driver.ts";
import { pumpBody } from "../body_pump.ts";
import { MAX_PARTS } from "./multipart_api.ts";
import { listObjects } from "./object_listing.ts";
import { PartialWriter } from "./partial_writer.ts";
import type { PartObject } from "./partial_writer.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";
import type { CopyLimits } from "./server_side_copy.ts";
import { StagedObject } from "./staged_object.ts";
import { StagedParts } from "./staged_parts.ts";
import { partSizeFor } from "./staging_writer.ts";

/** What the state's `data` holds for the S3 driver. */
interface PartialObjects {
  partBytes: number;
  parts: PartObject[];
  tail: PartObject | null;
}

export interface S3PartialsOptions {
  client: S3Client;
  /** Where resumable uploads' objects live, e.g. "partial/". */
  prefix: string;
  partSizeBytes: number;
  partConcurrency: number;
  pieceKeyOf(key: string): string;
  copyLimits: CopyLimits;
}

export class S3Partials implements PartialStore {
  readonly #options: S3PartialsOptions;

  constructor(options: S3PartialsOptions) {
    this.#options = options;
  }

  create(id: string, options: { length: number }): Promise<PartialState> {
    // Nothing to write yet: the first append makes the first object.
    const data: PartialObjects = {
      partBytes: partSizeFor(options.length, this.#options.partSizeBytes),
      parts: [],
      tail: null,
    };
    return Promise.resolve({ id: this.#idOf(id), size: 0, data });
  }

  async append(
    state: PartialState,
    body: ReadableStream<Uint8Array>,
    options: AppendOptions,
  ): Promise<AppendResult> {
    const data = dataOf(state);
    const { client } = this.#options;
    const writer = new PartialWriter({
      client,
      prefix: this.#prefixOf(state.id),
      start: state.size - (data.tail?.size ?? 0),
      partBytes: data.partBytes,
      concurrency: this.#options.partConcurrency,
      expectedBytes: (data.tail?.size ?? 0) + options.expectedBytes,
      // Not the append's signal: an abort ends the body's read, and what arrived is still written.
    });
    try {
      if (data.tail) await writer.write(await this.#bytesOf(data.tail, options.signal));
      const pumped = await pumpBody(
        body,
        { ...options, computeSha256: false, keepCutBody: true },
        (chunk) => writer.write(chunk),
      );
      if (pumped.size === 0) {
        await writer.abort();
        return { state, cut: pumped.cut };
      }
      await writer.finish();
      const next: PartialObjects = {
        partBytes: data.partBytes,
        parts: [...data.parts, ...writer.parts],
        tail: writer.tail,
      };
      if (next.parts.length + 1 > MAX_PARTS) {
        throw new StoreError("rejected", "Cannot store upload: it has too many parts");
      }
      return {
        state: { id: state.id, size: state.size + pumped.size, data: next },
        cut: pumped.cut,
      };
    } catch (error) {
      await writer.abort();
      throw error instanceof StoreError
        ? error
        : new StoreError("rejected", `Storage refused the upload: ${(error as Error).message}`, {
          cause: error,
        });
    }
  }

  read(
    state: PartialState,
    range: { from: number; to: number; signal?: AbortSignal },
  ): ReadableStream<Uint8Array> {
    return ReadableStream.from(this.#readRange(objectsOf(dataOf(state)), range));
  }

  staged(state: PartialState, digest: { sha256: string | null }): StagedPiece {
    const objects = objectsOf(dataOf(state));
    const { client, pieceKeyOf, copyLimits } = this.#options;
    if (objects.length === 1) {
      return new StagedObject({
        client,
        stagingKey: objects[0].key,
        size: state.size,
        sha256: digest.sha256,
        pieceKeyOf,
        copyLimits,
      });
    }
    return new StagedParts({
      client,
      objects,
      size: state.size,
      sha256: digest.sha256,
      pieceKeyOf,
      concurrency: copyLimits.concurrency,
    });
  }

  async release(previous: PartialState, current: PartialState): Promise<void> {
    const kept = new Set(objectsOf(dataOf(current)).map((o) => o.key));
    const dropped = objectsOf(dataOf(previous)).filter((o) => !kept.has(o.key));
    await Promise.all(dropped.map((o) => deleteQuietly(this.#options.client, o.key)));
  }

  async remove(id: string): Promise<void> {
    const keys: string[] = [];
    for await (const object of listObjects(this.#options.client, this.#prefixOf(id))) {
      keys.push(object.key);
    }
    await Promise.all(keys.map((key) => deleteQuietly(this.#options.client, key)));
  }

  async *list(): AsyncIterable<{ id: string; modifiedMs: number }> {
    const latest = new Map<string, number>();
    for await (const object of listObjects(this.#options.client, this.#options.prefix)) {
      const id = object.key.slice(this.#options.prefix.length).split("/")[0];
      if (!/^[0-9a-f]{32}$/.test(id)) continue;
      latest.set(id, Math.max(latest.get(id) ?? 0, object.lastModified));
    }
    for (const [id, modifiedMs] of latest) yield { id, modifiedMs };
  }

  async *#readRange(
    objects: readonly PartObject[],
    range: { from: number; to: number; signal?: AbortSignal },
  ): AsyncGenerator<Uint8Array> {
    for (const object of objects) {
      const first = Math.max(range.from, object.start);
      const end = Math.min(range.to, object.start + object.size);
      if (first >= end) continue;
      const response = await this.#options.client.open({
        method: "GET",
        key: object.key,
        headers: { range: `bytes=${first - object.start}-${end - object.start - 1}` },
        signal: range.signal,
      });
      yield* response.body!;
    }
  }

  async #bytesOf(object: PartObject, signal?: AbortSignal): Promise<Uint8Array> {
    const response = await this.#options.client.open({ method: "GET", key: object.key, signal });
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (bytes.byteLength !== object.size) {
      throw new StoreError("rejected", `The upload's tail ${object.key} is not what was written`);
    }
    return bytes;
  }

  #prefixOf(id: string): string {
    return `${this.#options.prefix}${this.#idOf(id)}/`;
  }

  #idOf(id: string): string {
    if (!/^[0-9a-f]{32}$/.test(id)) throw new Error(`Cannot use upload id "${id}"`);
    return id;
  }
}

function dataOf(state: PartialState): PartialObjects {
  return state.data as PartialObjects;
}

/** The objects of an upload in order: sealed parts, then the tail. */
function objectsOf(data: PartialObjects): PartObject[] {
  return data.tail ? [...data.parts, data.tail] : [...data.parts];
}
