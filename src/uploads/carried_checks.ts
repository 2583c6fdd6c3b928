/**
 * The checks of a resumable upload, carried from one PATCH to the next: the
 * piece hasher (PieceCIDv1/v2) or the SHA-256 (a sha2-256 cid, and small
 * uploads whose digest is worth having at once), and for an upload typed as a
 * CAR the CAR's parser with the blocks it found (ipfs/car_upload.ts), keep
 * their state in memory between requests, so the last byte verifies (and a
 * CAR's blocks are indexed) without reading the upload back.
 *
 * A state is valid at one offset. When a request finds none at the upload's
 * recorded offset (after a restart, when another instance took the previous
 * PATCHes, or when the cache let it go) it catches up by reading the staged
 * bytes it has not seen back from the store, once: from its own offset when
 * it is behind, from the start when it has none. Memory is bounded: at most
 * `maxStates` uploads keep a state (the least recently used go first); each
 * holds up to one hashing segment (about 1 MiB), and CAR states together at
 * most `maxCarBlocks` block locations (about 50 bytes each); past either
 * bound the least recently used state goes, to be rebuilt if its upload goes on.
 */
import { createHash } from "node:crypto";
import type { Hash } from "node:crypto";
import { parseCid } from "../kernel/piece_cid/cid_codec.ts";
import type { ParsedCid } from "../kernel/piece_cid/cid_codec.ts";
import type { ResumableUploadRecord } from "../domain/resumable_upload_records.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { createCidVerifier } from "../kernel/piece_cid/verify.ts";
import type { CidVerifier } from "../kernel/piece_cid/verify.ts";
import type { PartialState, PartialStore, StagedPiece } from "../driver/driver.ts";
import { CarUpload, isCarMediaType, MAX_BLOCKS_PER_CAR } from "../ipfs/car_upload.ts";
import { CarFormatError } from "../ipfs/car_stream.ts";
import { ResumableError } from "./resumable_outcomes.ts";

/** Uploads up to this size get their SHA-256 on the way, as /api/upload does. */
export const SHA256_ON_THE_WAY_BYTES = 4 * 1024 * 1024;

export interface UploadHash {
  /** Bytes seen so far. */
  offset: number;
  verifier: CidVerifier | null;
  sha256: Hash | null;
  /** The CAR check of an upload typed as a CAR; null for any other. */
  car: CarUpload | null;
  /** Feeds a chunk (copied where kept); may ask the producer to wait; throws on a bad CAR. */
  onChunk(chunk: Uint8Array): Promise<void> | undefined;
}

export interface HashStatesOptions {
  pool: HashWorkerPool | null;
  partials: PartialStore;
  maxStates?: number;
  /** Block locations all kept CAR states may hold together (default two CARs' worth). */
  maxCarBlocks?: number;
}

/** What fixes an upload's checks: its cid, its length and its media type. */
export interface UploadTerms {
  parsedCid: ParsedCid;
  length: number;
  contentType: string;
}

/** The terms of a recorded upload. */
export function termsOf(upload: ResumableUploadRecord): UploadTerms {
  return {
    parsedCid: parseCid(upload.cid),
    length: upload.length,
    contentType: upload.contentType,
  };
}

export class UploadHashStates {
  readonly #options: HashStatesOptions;
  readonly #maxStates: number;
  readonly #maxCarBlocks: number;
  /** Insertion order is use order: the first key is the least recently used. */
  readonly #states = new Map<string, UploadHash>();

  constructor(options: HashStatesOptions) {
    this.#options = options;
    this.#maxStates = options.maxStates ?? 32;
    this.#maxCarBlocks = options.maxCarBlocks ?? 2 * MAX_BLOCKS_PER_CAR;
  }

  /**
   * The upload's state at `state.size`, caught up from the store if needed; it is
   * the caller's until put back (a failed request drops it instead).
   */
  async take(
    upload: UploadTerms,
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
    while (this.#states.size > this.#maxStates || this.#carBlocks() > this.#maxCarBlocks) {
      this.#states.delete(this.#states.keys().next().value!);
    }
  }

  /** Block locations the kept CAR states hold. */
  #carBlocks(): number {
    let blocks = 0;
    for (const hash of this.#states.values()) blocks += hash.car?.blocks.size ?? 0;
    return blocks;
  }

  drop(id: string): void {
    this.#states.delete(id);
  }

  #fresh(upload: UploadTerms): UploadHash {
    const verifier = createCidVerifier(upload.parsedCid, this.#options.pool);
    const sha256 = verifier?.usesSha256 || upload.length <= SHA256_ON_THE_WAY_BYTES
      ? createHash("sha256")
      : null;
    const car = isCarMediaType(upload.contentType) ? new CarUpload() : null;
    const hash: UploadHash = {
      offset: 0,
      verifier,
      sha256,
      car,
      onChunk(chunk) {
        // The CAR first: a bad block throws before the chunk counts as seen.
        car?.onChunk(chunk);
        hash.offset += chunk.byteLength;
        sha256?.update(chunk);
        return verifier?.onChunk(chunk);
      },
    };
    return hash;
  }
}

/** An opaque cid of a large upload that is no CAR is not checked on the way: any offset will do. */
function needsBytes(hash: UploadHash): boolean {
  return hash.verifier !== null || hash.sha256 !== null || hash.car !== null;
}

/** What the checks found once the last byte is in. */
export interface FinishedChecks {
  /** Whether the bytes were checked against the cid (false: an opaque cid, stored as given). */
  verified: boolean;
  /** A CAR's roots and blocks, for the result and the block index; null for any other upload. */
  car: { roots: string[]; blocks: CarUpload["blocks"] } | null;
}

/**
 * The checks' verdict on the whole upload: 400 cid_mismatch when the bytes do
 * not hash to the cid, invalid_car when a CAR ended before its last block.
 */
export async function finishChecks(
  hash: UploadHash,
  staged: StagedPiece,
): Promise<FinishedChecks> {
  let roots: string[] | null = null;
  try {
    if (hash.car) roots = hash.car.finish().roots;
  } catch (error) {
    if (!(error instanceof CarFormatError)) throw error;
    throw new ResumableError("invalid_car", `${error.message}; nothing was stored`);
  }
  if (hash.verifier && !await hash.verifier.matches(staged)) {
    throw new ResumableError(
      "cid_mismatch",
      "The bytes do not hash to this cid; nothing was stored",
    );
  }
  return {
    verified: hash.verifier !== null,
    car: hash.car && roots ? { roots, blocks: hash.car.blocks } : null,
  };
}
