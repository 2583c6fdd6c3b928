/**
 * What every route that serves stored bytes (/p/, /f/, /piece/) shares: its
 * dependencies, and the one straight line from a cid to a piece that may be
 * served. The catalog row decides existence (a row exists only once its bytes
 * are durable); a piece a garbage-collection sweep removed (no deal kept it)
 * is 410 gone until its bytes are uploaded again; a scrub's corrupt mark
 * refuses the bytes. Checked here once for every route, and for every piece
 * a split file's stream opens.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";
import type { Logger } from "../../kernel/log.ts";
import type { PieceCatalog } from "../../catalog/catalog.ts";
import { StoreError } from "../../driver/driver.ts";
import type { PieceStore } from "../../driver/driver.ts";
import type { StoreReachability } from "../../catalog/reachability.ts";
import type { PieceOffload } from "./offload.ts";
import type { SmallPieceCache } from "./small_piece_cache.ts";

export interface RetrievalDeps {
  store: PieceStore;
  catalog: PieceCatalog;
  logger: Logger;
  cache: SmallPieceCache;
  reachability: Pick<StoreReachability, "reachable">;
  /** Hands disk-stored pieces to the proxy in front (--x-accel-redirect); null: never. */
  offload: PieceOffload | null;
  /** Told when a split file's answer is cut off because a piece failed mid-stream. */
  onStreamAborted?: (route: string) => void;
}

/** The piece stored under cid, if it may be served; ApiError (404, 410, 503) otherwise. */
export async function findServablePiece(deps: RetrievalDeps, cid: string): Promise<PieceRecord> {
  return await servablePiece(deps, cid, await deps.catalog.getPiece(cid));
}

/**
 * The catalog's row for cid (null: none), looked up by the caller already, if
 * it may be served; ApiError (404, 410, 503) otherwise.
 */
export async function servablePiece(
  deps: RetrievalDeps,
  cid: string,
  piece: PieceRecord | null,
): Promise<PieceRecord> {
  if (piece === null) {
    // Tell "not stored" from "cannot look": the store says offline if it is.
    await deps.store.stat(cid).catch((error) => {
      throw error instanceof StoreError && error.failure === "offline" ? offline() : error;
    });
    throw new ApiError("not_found", `No piece is stored under ${cid}`);
  }
  if (piece.removedAt !== null) {
    deps.cache.delete(cid);
    throw new ApiError(
      "gone",
      `${cid} was removed on ${piece.removedAt}: no deal kept it; uploading the same bytes ` +
        "stores it again",
    );
  }
  if (piece.corruptAt !== null) {
    deps.cache.delete(cid);
    throw new ApiError(
      "piece_corrupt",
      `The stored bytes of ${cid} failed verification; the operator must restore it from a backup`,
    );
  }
  return piece;
}

/** What read() finds, or 500 when the catalog knows the piece but the store does not. */
export async function mustExist<T>(
  deps: RetrievalDeps,
  cid: string,
  read: () => Promise<T | null>,
): Promise<T> {
  let result: T | null;
  try {
    result = await read();
  } catch (error) {
    if (error instanceof StoreError && error.failure === "offline") throw offline();
    throw error;
  }
  if (result === null) {
    // The database knows the piece but the store does not: never serve a guess.
    deps.logger.error("piece missing from store", { cid });
    throw new ApiError("internal_error", `Piece ${cid} is recorded but its bytes are missing`);
  }
  return result;
}

/**
 * The whole of a small piece in memory (a manifest, or a piece to be cached):
 * the bytes memory holds already if given, else read from the store; 500
 * when they are not the size the catalog lists.
 */
export async function wholePiece(
  deps: RetrievalDeps,
  piece: PieceRecord,
  held?: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  let bytes = held;
  if (bytes === undefined) {
    const opened = await mustExist(deps, piece.cid, () => deps.store.open(piece.cid));
    bytes = new Uint8Array(await new Response(opened.body).arrayBuffer());
  }
  if (bytes.byteLength !== piece.size) {
    throw new ApiError("internal_error", `Piece ${piece.cid} has ${bytes.byteLength} bytes stored`);
  }
  return bytes;
}

/** Whether a piece read just now may still be served (and so cached). */
export function stillServable(piece: PieceRecord | null): boolean {
  return piece !== null && piece.corruptAt === null && piece.removedAt === null;
}

export function offline(): ApiError {
  return new ApiError("storage_offline", "Storage backend is offline; try again later");
}
