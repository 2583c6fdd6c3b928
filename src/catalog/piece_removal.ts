/**
 * Removing a piece's bytes without ever losing what is still wanted. Each
 * step runs under the cid's commit lock (cid_locks.ts), which an upload of
 * the cid holds from its "is it stored?" to its deal's commit, so the two
 * never interleave: an upload that comes first leaves a deal the removal's
 * re-check sees (the piece stays); one that comes after finds the piece
 * removed and stores its bytes again (catalog.ts).
 *
 * The order survives a crash at any point (domain/lifecycle_records.ts: LifecycleRecords):
 * the piece is marked as being removed (retrieval answers 410 from then on)
 * before its bytes are deleted, and marked removed only after. So no row of a
 * stored piece ever names missing bytes, and bytes are never left behind
 * unnamed: a mark left unfinished is found by the next sweep (resume).
 */
import type { CatalogRecords } from "../domain/catalog_records.ts";
import type { LifecycleRecords, RemovalMark } from "../domain/lifecycle_records.ts";
import type { CidLocks } from "../domain/locks.ts";
import type { PieceStore } from "../driver/driver.ts";

export interface PieceRemovalOptions {
  store: PieceStore;
  records: Pick<CatalogRecords, "getPiece">;
  lifecycle: LifecycleRecords;
  cidLocks: CidLocks;
}

export class PieceRemoval {
  readonly #options: PieceRemovalOptions;

  constructor(options: PieceRemovalOptions) {
    this.#options = options;
  }

  /**
   * Removes the bytes of each of `cids` that, judged under its lock, no deal
   * has wanted since `endedBy`: one transaction marks them all, then their
   * bytes go. Returns the removals' marks, which the caller finishes
   * (LifecycleRecords.finishRemovals) once it likes; a cid that stays is
   * left out.
   */
  removeAll(cids: readonly string[], endedBy: string, at: string): Promise<RemovalMark[]> {
    const { lifecycle, store, cidLocks } = this.#options;
    return cidLocks.runAll(cids, async () => {
      const marks = await lifecycle.beginRemovals(cids, endedBy, at);
      for (const { cid } of marks) await store.delete(cid);
      return marks;
    });
  }

  /**
   * Deletes the bytes of a removal a sweep began and never finished, unless
   * an upload brought the piece back meanwhile. True when the mark still
   * stood (the caller finishes it).
   */
  resume(mark: number, cid: string): Promise<boolean> {
    const { lifecycle, store, cidLocks } = this.#options;
    return cidLocks.run(cid, async () => {
      if (!await lifecycle.isRemovalPending(mark)) return false;
      await store.delete(cid);
      return true;
    });
  }

  /**
   * Deletes an object no stored piece's row names, if that still holds under
   * its lock (an upload commits its bytes a moment before its row) and it was
   * last written at or before `writtenBy` (Unix ms).
   */
  removeOrphan(key: string, writtenBy: number): Promise<OrphanOutcome> {
    const { records, store, cidLocks } = this.#options;
    return cidLocks.run(key, async () => {
      const piece = await records.getPiece(key);
      if (piece !== null && piece.removedAt === null) return { removed: false, why: "named" };
      const stat = await store.stat(key);
      if (stat === null) return { removed: false, why: "gone" };
      if (stat.modifiedAt > writtenBy) return { removed: false, why: "young" };
      return await store.delete(key)
        ? { removed: true, size: stat.size }
        : { removed: false, why: "gone" };
    });
  }
}

/** What became of an orphan: deleted, or left (named by a row now, written too recently, gone). */
export type OrphanOutcome =
  | { removed: true; size: number }
  | { removed: false; why: "named" | "young" | "gone" };
