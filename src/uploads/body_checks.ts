/**
 * The checks every body an upload brings goes through, whether it comes in one
 * request (POST /api/upload, staging.ts) or over many (tus, carried_checks.ts
 * keeps them between requests): the cid's (kernel/piece_cid/verify.ts), a
 * CAR's (every block against its cid, ipfs/car_upload.ts), a manifest's
 * against the pieces stored (manifest_check.ts), and the rule for when the
 * SHA-256 of the bytes is worth computing on the way. One copy, so both ways
 * refuse the same bodies with the same errors.
 *
 * The checks are fed chunk by chunk while the bytes arrive (`onChunk`) and
 * finished once, after the last byte (`finish`): that yields what the commit
 * needs (whether the cid was verified, a CAR's roots and blocks) or throws
 * the ApiError the upload is refused with. Nothing is committed here.
 */
import { createHash } from "node:crypto";
import type { Hash } from "node:crypto";
import { ApiError } from "../kernel/errors.ts";
import { CarFormatError } from "../ipfs/car_stream.ts";
import { CarUpload, isCarMediaType } from "../ipfs/car_upload.ts";
import type { BlockLocations } from "../domain/catalog_records.ts";
import type { ParsedCid } from "../kernel/piece_cid/cid_codec.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { createCidVerifier } from "../kernel/piece_cid/verify.ts";
import type { CidVerifier } from "../kernel/piece_cid/verify.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { StagedPiece } from "../driver/driver.ts";
import { isManifestType } from "../kernel/manifest_format.ts";
import { manifestCollectorFor } from "./manifest_check.ts";
import type { ManifestCollector } from "./manifest_check.ts";

/**
 * Bodies up to this size are hashed (SHA-256) while they arrive: a few
 * milliseconds of hashing at most, less than what hashing afterwards costs
 * (reopening the file and a second fsynced database write).
 */
export const SHA256_ON_THE_WAY_BYTES = 4 * 1024 * 1024;

/**
 * Whether a body's SHA-256 is computed while it arrives. Hashing on the way
 * costs about a quarter of a large upload's throughput, so a large first
 * upload is hashed after the fact (catalog/digests.ts); the SHA-256 is
 * computed on the way when the cid check needs it (a sha2-256 cid) or when it
 * is cheaper than a second pass (a small body).
 */
export function sha256OnTheWay(length: number, verifier: CidVerifier | null): boolean {
  return length <= SHA256_ON_THE_WAY_BYTES || verifier?.usesSha256 === true;
}

/** What fixes a body's checks: its cid, its length and its media type (and a CAR's bound). */
export interface BodyTerms {
  parsedCid: ParsedCid;
  length: number;
  contentType: string;
  /** Most blocks a CAR may hold (the caller's tier's; 413 too_many_blocks past it). */
  maxCarBlocks: number;
}

export interface BodyChecksOptions {
  terms: BodyTerms;
  /** Workers for piece-cid verification; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  /** What a manifest's pieces are checked against. */
  catalog: PieceCatalog;
  /**
   * Who computes the SHA-256 the rule asks for: the store, as it stages a body
   * that comes in one request ("store"), or these checks, carried from one
   * request of a resumable upload to the next ("checks").
   */
  sha256By: "store" | "checks";
  /**
   * Where a manifest's bytes come from: kept as they pass ("on_the_way", one
   * request's body), or read again at `finish` ("read_again"): a resumable
   * upload holds no manifest (up to 16 MiB) in memory between its requests.
   */
  manifestBytes: "on_the_way" | "read_again";
}

/** What the checks found once the last byte is in. */
export interface FinishedChecks {
  /** Whether the bytes were checked against the cid (false: an opaque cid, stored as given). */
  verified: boolean;
  /** A CAR's roots, for the result; null for any other body. */
  roots: string[] | null;
  /** A CAR's blocks, for the block index; null for any other body. */
  blocks: BlockLocations | null;
}

export class BodyChecks {
  readonly #options: BodyChecksOptions;
  readonly #verifier: CidVerifier | null;
  readonly #car: CarUpload | null;
  readonly #manifest: ManifestCollector | null;
  readonly #sha256: Hash | null;
  /** Whether the rule asks for the body's SHA-256 on the way (whoever computes it). */
  readonly wantsSha256: boolean;
  /** Bytes fed so far (a CAR's refused chunk not counted). */
  seenBytes = 0;

  /** Throws 400 invalid_manifest for a manifest over its size limit, before a byte is read. */
  constructor(options: BodyChecksOptions) {
    const { terms } = options;
    this.#options = options;
    this.#verifier = createCidVerifier(terms.parsedCid, options.hashPool);
    this.#manifest = options.manifestBytes === "on_the_way"
      ? manifestCollectorFor(terms.contentType, terms.length)
      : null;
    this.#car = isCarMediaType(terms.contentType)
      ? new CarUpload({ maxBlocks: terms.maxCarBlocks })
      : null;
    this.wantsSha256 = sha256OnTheWay(terms.length, this.#verifier);
    this.#sha256 = options.sha256By === "checks" && this.wantsSha256 ? createHash("sha256") : null;
  }

  /** Whether any check reads the bytes (an opaque cid of a large plain body: none does). */
  get readsBytes(): boolean {
    return this.#verifier !== null || this.#sha256 !== null || this.#car !== null ||
      this.#manifest !== null;
  }

  /**
   * The chunk hook for the store, or undefined when no check reads the bytes.
   * The CAR check comes first: a bad block throws (to stop the body) before the
   * chunk counts as seen. May ask the producer to wait (the cid's hashing).
   */
  get onChunk(): ((chunk: Uint8Array) => Promise<void> | undefined) | undefined {
    if (!this.readsBytes) return undefined;
    const car = this.#car;
    const sha256 = this.#sha256;
    const manifest = this.#manifest;
    const verifier = this.#verifier;
    const rest = (chunk: Uint8Array) => {
      this.seenBytes += chunk.byteLength;
      sha256?.update(chunk);
      manifest?.onChunk(chunk);
      return verifier?.onChunk(chunk);
    };
    return (chunk) => {
      // A CAR of tiny blocks is checked in slices: the rest waits for its last one.
      const checking = car?.onChunk(chunk);
      return checking ? checking.then(() => rest(chunk)) : rest(chunk);
    };
  }

  /** Block locations a CAR's check holds so far (what bounds the carried checks' memory). */
  get carBlockCount(): number {
    return this.#car?.blocks.size ?? 0;
  }

  /** The SHA-256 these checks computed (sha256By "checks"), as lowercase hex; once. */
  sha256Hex(): string | null {
    return this.#sha256?.digest("hex") ?? null;
  }

  /**
   * 400 invalid_car when a bad block stopped the body while it arrived; null
   * when something else did. The body is left unread where the block was:
   * the connection is not kept.
   */
  carRefusal(): ApiError | null {
    const problem = this.#car?.problem;
    return problem ? invalidCar(problem, { bodyLeftUnread: true }) : null;
  }

  /**
   * The checks' verdict on the whole body, in this order: 400 invalid_car when
   * a CAR ended before its last block, 400 cid_mismatch when the bytes do not
   * hash to the cid, then a manifest's invalid_manifest or manifest_incomplete.
   * `readAgain` gives the whole body once more, for a manifest whose bytes
   * were not kept on the way.
   */
  async finish(
    staged: StagedPiece,
    readAgain?: () => ReadableStream<Uint8Array>,
  ): Promise<FinishedChecks> {
    const roots = await this.#finishCar();
    if (this.#verifier && !await this.#verifier.matches(staged)) {
      throw new ApiError("cid_mismatch", "The bytes do not hash to this cid; nothing was stored");
    }
    const manifest = this.#options.manifestBytes === "on_the_way"
      ? this.#manifest
      : await this.#manifestReadAgain(readAgain);
    await manifest?.check(this.#options.catalog);
    return {
      verified: this.#verifier !== null,
      roots,
      blocks: this.#car?.blocks ?? null,
    };
  }

  /** A CAR's roots once its last byte is in (400 invalid_car if it ended early); null: no CAR. */
  async #finishCar(): Promise<string[] | null> {
    try {
      return (await this.#car?.finish())?.roots ?? null;
    } catch (error) {
      throw error instanceof CarFormatError ? invalidCar(error) : error;
    }
  }

  /** A manifest collected from its bytes read again; null when the body is no manifest. */
  async #manifestReadAgain(
    readAgain: (() => ReadableStream<Uint8Array>) | undefined,
  ): Promise<ManifestCollector | null> {
    const { terms } = this.#options;
    if (!isManifestType(terms.contentType)) return null;
    if (readAgain === undefined) throw new Error("finish needs readAgain to check a manifest");
    const manifest = manifestCollectorFor(terms.contentType, terms.length)!;
    for await (const chunk of readAgain()) manifest.onChunk(chunk);
    return manifest;
  }
}

/**
 * 400 invalid_car; the message names the block or the hash. A CAR of more
 * blocks than the caller's bound is 413 too_many_blocks instead. A body cut
 * off before its end leaves the connection in an unknown state: it is not kept.
 */
function invalidCar(error: CarFormatError, options: { bodyLeftUnread?: boolean } = {}): ApiError {
  const code = error.problem === "too_many_blocks" ? "too_many_blocks" : "invalid_car";
  return new ApiError(code, `${error.message}; nothing was stored`, {
    cause: error,
    headers: options.bodyLeftUnread ? { connection: "close" } : {},
  });
}
