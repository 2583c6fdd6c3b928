/**
 * A body that comes in one request (POST /api/upload), staged with every
 * check that runs while it streams and once it is in (body_checks.ts: the
 * cid's, a CAR's, a manifest's). A failed check discards the staged bytes and
 * answers its error; nothing is committed here (pipeline.ts commits).
 */
import { ApiError } from "../kernel/errors.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { MinBodyRate } from "../kernel/streams/read_watchdog.ts";
import type { PieceStore, StagedPiece, StageOptions } from "../driver/driver.ts";
import { BodyChecks } from "./body_checks.ts";
import type { BodyTerms, FinishedChecks } from "./body_checks.ts";
import { apiErrorOfStoreFailure } from "./store_errors.ts";

export interface StageDeps {
  store: PieceStore;
  catalog: PieceCatalog;
  hashPool: HashWorkerPool | null;
}

/**
 * How a request's body is read: the request's own limits (the field names
 * are the request context's, so a handler passes its context as it is).
 */
export interface BodyReading {
  /** Aborted when the server gives up on in-flight requests at shutdown. */
  signal: AbortSignal;
  /** A body that sends nothing for this long is abandoned with 408 request_timeout. */
  bodyIdleTimeoutMs: number;
  /** A body slower than this on average (after its grace) is abandoned with 408; null: none. */
  bodyMinRate: MinBodyRate | null;
  /** Throws (401) if the credentials were revoked or expired while the body came. */
  callerStillValid(): Promise<void>;
}

/** The body to stage: the canonical cid (what a conflict is looked up under) and its terms. */
export interface UploadToStage extends BodyTerms {
  cid: string;
}

export interface CheckedBody extends FinishedChecks {
  staged: StagedPiece;
}

/**
 * Stages the body, checking it on the way and once it is in: against a verifiable cid
 * (400 cid_mismatch), a CAR's blocks against theirs (400 invalid_car), and a manifest
 * against the pieces stored (manifest_check.ts). A staged piece that fails a check is
 * discarded before the error is thrown.
 */
export async function stageChecked(
  deps: StageDeps,
  body: ReadableStream<Uint8Array> | null,
  reading: BodyReading,
  upload: UploadToStage,
): Promise<CheckedBody> {
  const checks = new BodyChecks({
    terms: upload,
    hashPool: deps.hashPool,
    catalog: deps.catalog,
    sha256By: "store",
    manifestBytes: "on_the_way",
  });
  const staged = await stageBody(deps.store, body, {
    expectedBytes: upload.length,
    signal: reading.signal,
    idleTimeoutMs: reading.bodyIdleTimeoutMs,
    minRate: reading.bodyMinRate,
    onChunk: checks.onChunk,
    // A cid stored already wants the digest too: its conflict check compares them. A CAR's
    // blocks are hashed on the way regardless: that is its check, not the piece's digest.
    computeSha256: checks.wantsSha256 || await deps.catalog.getPiece(upload.cid) !== null,
  }).catch((error) => {
    // The store saw the CAR's refusal as a failed body: answer what it was.
    throw checks.carRefusal() ?? error;
  });
  try {
    return { staged, ...await checks.finish(staged) };
  } catch (error) {
    await staged.discard();
    throw error;
  }
}

async function stageBody(
  store: PieceStore,
  body: ReadableStream<Uint8Array> | null,
  options: StageOptions,
) {
  if (!body) throw new ApiError("no_body", "Request body is required");
  try {
    return await store.stage(body, options);
  } catch (error) {
    throw apiErrorOfStoreFailure(error);
  }
}
