/**
 * The cid check of a resumable upload, carried from one PATCH to the next:
 * the piece hasher (PieceCIDv1/v2) or the SHA-256 (a sha2-256 cid, and small
 * uploads whose digest is worth having at once) keep their state in memory
 * between requests, so the last byte verifies without reading the upload back.
 *
 * A state is valid at one offset. When a request finds none at the upload's
 * recorded offset (after a restart, when another instance took the previous
 * PATCHes, or when the cache let it go) it catches up by reading the staged
 * bytes it has not seen back from the store, once: from its own offset when
 * it is behind, from the start when it has none. Memory is bounded: at most
 * `maxStates` uploads keep a state (the least recently used go first); each
 * holds up to one hashing segment (about 1 MiB).
 */
import { createHash } from "node:crypto";
import type { Hash } from "node:crypto";
import type { ParsedCid } from "../piece_cid/cid_codec.ts";
import type { HashWorkerPool } from "../piece_cid/pool.ts";
import { createCidVerifier } from "../piece_cid/verify.ts";
import type { CidVerifier } from "../piece_cid/verify.ts";
import type { PartialState, PartialStore } from "../storage/driver/driver.ts";

/** Uploads up to this size get their SHA-256 on the way, as /api/upload does. */
export const SHA256_ON_THE_WAY_BYTES = 4 * 1024 * 1024;

export interface UploadHash {
  /** Bytes seen so far. */
  offset: number;
  verifier: CidVerifier | null;
  sha256: Hash | null;
  /** Feeds a chunk (copied where kept); may ask the producer to wait. */
  onChunk(chunk: Uint8Array): Promise<void> | undefined;
}

export interface HashStatesOptions {
  pool: HashWorkerPool | null;
  partials: PartialStore;
  maxStates?: number;
}

export class UploadHashStates {
  readonly #options: HashStatesOptions;
  readonly #maxStates: number;
  /** Insertion order is use order: the first key is the least recently used. */
  readonly #states = new Map<string, UploadHash>();

  constructor(options: HashStatesOptions) {
    this.#options = options;
    this.#maxStates = options.maxStates ?? 32;
  }

  /**
   * The upload's state at `state.size`, caught up from the store if needed; it is
   * the caller's until put back (a failed request drops it instead).
   */
  async take(
    upload: { parsedCid: ParsedCid; length: number },
    state: PartialState,
    signal?: AbortSignal,
  ): Promise<UploadHash> {
    let hash = this.#states.get(state.id);
    this.#states.delete(state.id);
    if (hash === undefined || hash.offset > state.size) hash = this.#fresh(upload);
    if (hash.offset < state.size && needsBytes(hash)) {
      const stream = this.#options.partials.read(state, {
        from: hash.offset,
        to: state.size,
        signal,
      });
      for await (const chunk of stream) {
        const wait = hash.onChunk(chunk);
        if (wait) await wait;
      }
    }
    hash.offset = state.size;
    return hash;
  }

  /** Keeps a state for the upload's next request. */
  put(id: string, hash: UploadHash): void {
    this.#states.delete(id);
    this.#states.set(id, hash);
    while (this.#states.size > this.#maxStates) {
      this.#states.delete(this.#states.keys().next().value!);
    }
  }

  drop(id: string): void {
    this.#states.delete(id);
  }

  #fresh(upload: { parsedCid: ParsedCid; length: number }): UploadHash {
    const verifier = createCidVerifier(upload.parsedCid, this.#options.pool);
    const sha256 = verifier?.usesSha256 || upload.length <= SHA256_ON_THE_WAY_BYTES
      ? createHash("sha256")
      : null;
    const hash: UploadHash = {
      offset: 0,
      verifier,
      sha256,
      onChunk(chunk) {
        hash.offset += chunk.byteLength;
        sha256?.update(chunk);
        return verifier?.onChunk(chunk);
      },
    };
    return hash;
  }
}

/** An opaque cid of a large upload is not hashed on the way: any offset will do. */
function needsBytes(hash: UploadHash): boolean {
  return hash.verifier !== null || hash.sha256 !== null;
}
