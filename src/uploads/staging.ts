/**
 * An upload's body, staged with every check that runs while it streams and
 * once it is in: the cid's (kernel/piece_cid/verify.ts), a manifest's against the
 * pieces stored (manifest_check.ts) and, for a body sent as a CAR, the CAR's
 * (every block against its cid, ipfs/car_upload.ts). A failed check discards
 * the staged bytes and answers its error; nothing is committed here.
 */
import { ApiError } from "../kernel/errors.ts";
import { CarFormatError } from "../ipfs/car_stream.ts";
import { CarUpload, isCarMediaType } from "../ipfs/car_upload.ts";
import type { ParsedCid } from "../kernel/piece_cid/cid_codec.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { createCidVerifier } from "../kernel/piece_cid/verify.ts";
import type { CidVerifier } from "../kernel/piece_cid/verify.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { PieceStore, StagedPiece, StageOptions } from "../driver/driver.ts";
import type { RequestContext } from "../http/pipeline/context.ts";
import { manifestCollectorFor } from "./manifest_check.ts";
import type { ManifestCollector } from "./manifest_check.ts";
import { apiErrorOfStoreFailure } from "./store_errors.ts";

/**
 * Bodies up to this size are hashed while they arrive: a few milliseconds of
 * hashing at most, less than what hashing afterwards costs (reopening the file
 * and a second fsynced database write).
 */
const HASH_AFTERWARDS_ABOVE_BYTES = 4 * 1024 * 1024;

export interface StageDeps {
  store: PieceStore;
  catalog: PieceCatalog;
  hashPool: HashWorkerPool | null;
}

export interface UploadToStage {
  cid: string;
  parsedCid: ParsedCid;
  length: number;
  contentType: string;
}

export interface CheckedBody {
  staged: StagedPiece;
  /** Whether the bytes were checked against the cid (false: stored as given). */
  verified: boolean;
  /** The CAR's blocks, for the block index; null when the body is not a CAR. */
  car: CarUpload | null;
  /** A CAR's roots; undefined when the body is not a CAR. */
  roots: string[] | undefined;
}

/** The checks that see each chunk of the body as it streams. */
interface BodyChecks {
  verifier: CidVerifier | null;
  manifest: ManifestCollector | null;
  car: CarUpload | null;
}

/**
 * Stages the body, checking it on the way and once it is in: against a verifiable cid
 * (400 cid_mismatch), a CAR's blocks against theirs (400 invalid_car), and a manifest
 * against the pieces stored (manifest_check.ts). A staged piece that fails a check is
 * discarded before the error is thrown.
 */
export async function stageChecked(
  deps: StageDeps,
  request: Request,
  context: Pick<RequestContext, "signal" | "bodyIdleTimeoutMs" | "bodyMinRate">,
  upload: UploadToStage,
): Promise<CheckedBody> {
  const checks: BodyChecks = {
    verifier: createCidVerifier(upload.parsedCid, deps.hashPool),
    manifest: manifestCollectorFor(upload.contentType, upload.length),
    car: isCarMediaType(upload.contentType) ? new CarUpload() : null,
  };
  const { verifier, manifest, car } = checks;
  const staged = await stageBody(deps.store, request, {
    expectedBytes: upload.length,
    signal: context.signal,
    idleTimeoutMs: context.bodyIdleTimeoutMs,
    minRate: context.bodyMinRate,
    onChunk: chunkHook(checks),
    // Hashing on the way costs about a quarter of a large upload's throughput, so a
    // large first upload is hashed after the fact (store/digests.ts). Hash on the way
    // when the answer needs it (a sha2-256 cid; a cid stored already, to check for a
    // conflict) or when it is cheaper than a second pass (a small body). A CAR's blocks
    // are hashed on the way regardless: that is its check, not the piece's digest.
    computeSha256: upload.length <= HASH_AFTERWARDS_ABOVE_BYTES ||
      verifier?.usesSha256 === true || await deps.catalog.getPiece(upload.cid) !== null,
  }).catch((error) => {
    // The store saw the CAR's refusal as a failed body: answer what it was.
    throw car?.problem ? invalidCar(car.problem, { bodyLeftUnread: true }) : error;
  });
  try {
    const roots = finishCar(car);
    if (verifier && !await verifier.matches(staged)) {
      throw new ApiError("cid_mismatch", "The bytes do not hash to this cid; nothing was stored");
    }
    await manifest?.check(deps.catalog);
    return { staged, verified: verifier !== null, car, roots };
  } catch (error) {
    await staged.discard();
    throw error;
  }
}

/** The chunk hook: the CAR check first (it throws to stop the body), then the others. */
function chunkHook(
  { verifier, manifest, car }: BodyChecks,
): ((chunk: Uint8Array) => Promise<void> | undefined) | undefined {
  if (car === null && manifest === null) {
    return verifier ? (chunk) => verifier.onChunk(chunk) : undefined;
  }
  return (chunk) => {
    car?.onChunk(chunk);
    manifest?.onChunk(chunk);
    return verifier?.onChunk(chunk);
  };
}

/** A CAR's roots once its last byte is in (400 invalid_car if it ended early). */
function finishCar(car: CarUpload | null): string[] | undefined {
  try {
    return car?.finish().roots;
  } catch (error) {
    throw error instanceof CarFormatError ? invalidCar(error) : error;
  }
}

/**
 * 400 invalid_car; the message names the block or the hash. A body cut off
 * before its end leaves the connection in an unknown state: it is not kept.
 */
function invalidCar(error: CarFormatError, options: { bodyLeftUnread?: boolean } = {}): ApiError {
  return new ApiError("invalid_car", `${error.message}; nothing was stored`, {
    cause: error,
    headers: options.bodyLeftUnread ? { connection: "close" } : {},
  });
}

async function stageBody(store: PieceStore, request: Request, options: StageOptions) {
  if (!request.body) throw new ApiError("no_body", "Request body is required");
  try {
    return await store.stage(request.body, options);
  } catch (error) {
    throw apiErrorOfStoreFailure(error);
  }
}
