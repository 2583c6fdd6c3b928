/**
 * The checks of a resumable upload (body_checks.ts), carried from one PATCH
 * to the next: the piece hasher (PieceCIDv1/v2) or the SHA-256 (a sha2-256
 * cid, and small uploads whose digest is worth having at once), and for an
 * upload typed as a CAR the CAR's parser with the blocks it found
 * (ipfs/car_upload.ts), keep their state in memory between requests, so the
 * last byte verifies (and a CAR's blocks are indexed) without reading the
 * upload back. A manifest is the exception: its bytes are read again on the
 * last byte, not kept in memory between requests.
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
import { parseCid } from "../kernel/piece_cid/cid_codec.ts";
import type { ResumableUploadRecord } from "../domain/resumable_upload_records.ts";
import type { Tier } from "../domain/vocabulary.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { PartialState, PartialStore } from "../driver/driver.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import { MAX_BLOCKS_PER_CAR } from "../ipfs/car_upload.ts";
import { BodyChecks } from "./body_checks.ts";
import type { BodyTerms } from "./body_checks.ts";

export interface CarriedChecksOptions {
  pool: HashWorkerPool | null;
  partials: PartialStore;
  /** What a manifest's pieces are checked against. */
  catalog: PieceCatalog;
  maxStates?: number;
  /** Block locations all kept CAR states may hold together (default two CARs' worth). */
  maxCarBlocks?: number;
}

/** The terms of a recorded upload: what its checks are made from (`carMaxBlocks` by tier). */
export function termsOf(
  upload: ResumableUploadRecord,
  carMaxBlocks: Readonly<Record<Tier, number>>,
): BodyTerms {
  return {
    parsedCid: parseCid(upload.cid),
    length: upload.length,
    contentType: upload.contentType,
    maxCarBlocks: carMaxBlocks[upload.tier],
  };
}

export class CarriedChecks {
  readonly #options: CarriedChecksOptions;
  readonly #maxStates: number;
  readonly #maxCarBlocks: number;
  /** Insertion order is use order: the first key is the least recently used. */
  readonly #states = new Map<string, BodyChecks>();

  constructor(options: CarriedChecksOptions) {
    this.#options = options;
    this.#maxStates = options.maxStates ?? 32;
    this.#maxCarBlocks = options.maxCarBlocks ?? 2 * MAX_BLOCKS_PER_CAR;
  }

  /**
   * The upload's checks at `state.size`, caught up from the store if needed;
   * they are the caller's until put back (a failed request drops them instead).
   */
  async take(
    upload: BodyTerms,
    state: PartialState,
    signal?: AbortSignal,
  ): Promise<BodyChecks> {
    let checks = this.#states.get(state.id);
    this.#states.delete(state.id);
    if (checks === undefined || checks.seenBytes > state.size) checks = this.#fresh(upload);
    const onChunk = checks.onChunk;
    // An opaque cid of a large upload that is no CAR is not checked on the way: any offset will do.
    if (checks.seenBytes < state.size && onChunk) {
      const stream = this.#options.partials.read(state, {
        from: checks.seenBytes,
        to: state.size,
        signal,
      });
      for await (const chunk of stream) {
        const wait = onChunk(chunk);
        if (wait) await wait;
      }
    }
    checks.seenBytes = state.size;
    return checks;
  }

  /** Keeps an upload's checks for its next request. */
  put(id: string, checks: BodyChecks): void {
    this.#states.delete(id);
    this.#states.set(id, checks);
    while (this.#states.size > this.#maxStates || this.#carBlocks() > this.#maxCarBlocks) {
      this.#states.delete(this.#states.keys().next().value!);
    }
  }

  /** Block locations the kept CAR states hold. */
  #carBlocks(): number {
    let blocks = 0;
    for (const checks of this.#states.values()) blocks += checks.carBlockCount;
    return blocks;
  }

  drop(id: string): void {
    this.#states.delete(id);
  }

  #fresh(upload: BodyTerms): BodyChecks {
    return new BodyChecks({
      terms: upload,
      hashPool: this.#options.pool,
      catalog: this.#options.catalog,
      sha256By: "checks",
      manifestBytes: "read_again",
    });
  }
}
