/**
 * One piece copied from one store to another through the driver interface
 * (open on the source, stage and commit on the target), as the operator's
 * copies do it: a backup into a new data directory, a migration into the
 * scale-out store. Each piece is streamed, checked for its recorded size,
 * hashed on the way and committed only if its bytes match the recorded
 * SHA-256: a copy must not spread bit rot into the store that is meant to
 * replace or repair the source.
 *
 * A problem with one piece (missing, another size, rotted, refused) is that
 * piece's outcome, named for the operator; a store that is gone or full
 * stops the copy (thrown), since every later piece would fail the same way.
 */
import type { PieceRecord } from "../domain/catalog_records.ts";
import { StoreError } from "../driver/driver.ts";
import type { PieceStore } from "../driver/driver.ts";

export interface PieceCopyOptions {
  source: PieceStore;
  target: PieceStore;
  /** Skip a piece the target already holds at the recorded size (a resumed migration). */
  skipPresent: boolean;
}

export type PieceCopyOutcome =
  | { kind: "skipped" }
  /** The SHA-256 of the bytes copied (the recorded one when there was one). */
  | { kind: "copied"; sha256: string }
  /** The source has no bytes under the piece's cid. */
  | { kind: "missing" }
  /** `corrupt`: the bytes read differ from the recorded SHA-256 (bit rot in the source). */
  | { kind: "failed"; reason: string; corrupt: boolean };

export async function copyPiece(
  piece: PieceRecord,
  options: PieceCopyOptions,
): Promise<PieceCopyOutcome> {
  const { source, target } = options;
  // The resumability rule: bytes already there under the key, at the recorded size.
  if (options.skipPresent && (await target.stat(piece.cid))?.size === piece.size) {
    return { kind: "skipped" };
  }
  let opened;
  try {
    opened = await source.open(piece.cid);
  } catch (error) {
    if (isStoreOutage(error)) throw error;
    return failed(`cannot read it in the source: ${(error as Error).message}`);
  }
  if (opened === null) return { kind: "missing" };
  if (opened.size !== piece.size) {
    await opened.body.cancel().catch(() => {});
    return failed(`the source has ${opened.size} bytes, the database records ${piece.size}`);
  }
  let staged;
  try {
    staged = await target.stage(opened.body, { expectedBytes: piece.size, computeSha256: true });
  } catch (error) {
    // Staging stops reading at the first byte too many: close the source behind it.
    await opened.body.cancel().catch(() => {});
    if (isStoreOutage(error)) throw error;
    return failed(`cannot copy it: ${(error as Error).message}`);
  }
  if (piece.sha256 !== null && staged.sha256 !== piece.sha256) {
    await staged.discard();
    return {
      kind: "failed",
      reason: "its bytes do not match their recorded SHA-256",
      corrupt: true,
    };
  }
  try {
    await staged.commit(piece.cid);
  } catch (error) {
    await staged.discard();
    if (isStoreOutage(error)) throw error;
    return failed(`the target refused it: ${(error as Error).message}`);
  }
  return { kind: "copied", sha256: staged.sha256! };
}

function failed(reason: string): PieceCopyOutcome {
  return { kind: "failed", reason, corrupt: false };
}

/** A store that is offline or full (or an error no store names) fails every later piece too. */
export function isStoreOutage(error: unknown): boolean {
  if (!(error instanceof StoreError)) return true;
  return error.failure === "offline" || error.failure === "full";
}
