/**
 * The catalog joins the piece store (bytes) and the database (what is stored,
 * who made which deal). It owns the rule that stored bytes under a cid never
 * change: the first complete upload of a cid wins, identical re-uploads make
 * a new deal without a second copy, different bytes are a conflict.
 *
 * The database is the source of truth for visibility: a piece exists once its
 * row exists, and the row is written only after the bytes are durable. A crash
 * between rename and insert leaves an orphan file that the next upload of the
 * same cid simply replaces.
 *
 * When recording fails after the bytes were committed, they are removed only
 * once no row is known to name them: a database that went away mid-commit
 * may have committed the row all the same (the answer was lost). A commit
 * that failed is treated alike: a copy sent to a bucket that went silent may
 * be carried out once it answers again. So the
 * catalog asks again, under the cid's lock, and when the database cannot
 * say, keeps the cid and asks again later (settleUnrecorded, run from the
 * leftover sweep). A commit whose database lock was lost meanwhile (another
 * instance may be deciding about the same cid) stops before it writes.
 *
 * A piece a sweep removed (no deal wanted it; ops/gc.ts) is stored no more:
 * an upload of its cid stores the bytes again as if for the first time and
 * brings the row back (revivedPiece), under the same per-cid lock a removal
 * takes, so an upload and a removal of one cid never interleave.
 *
 * A manifest (Content-Type application/vnd.storage-manifest+json) keeps the
 * pieces it lists while a deal on it is active: what it lists is read back
 * from the store and recorded with its deal, in the deal's transaction.
 *
 * Conflicts are decided by SHA-256. A first upload is usually staged without
 * it (see digests.ts), so a re-upload computes whichever side is missing.
 * Each piece's PieceCIDv2 is recorded with it when its cid fixes it (a
 * PieceCIDv2, or a PieceCIDv1 and the size), and read back from the stored
 * bytes by the same background pass otherwise.
 *
 * The one exception to "stored bytes never change" is a repair: when a scrub
 * marked a piece corrupt (ops/scrub.ts), an upload of the right bytes
 * replaces the file and clears the mark. "Right" means the recorded size, and
 * either verified against the cid on the way in or equal to the recorded
 * SHA-256 (an opaque cid whose digest was never known takes the first
 * repair, as it took the first upload).
 */
import { addDays, toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import type { DealIdGenerator } from "./deal_id.ts";
import type {
  CatalogRecords,
  DealRecord,
  PieceRecord,
  RemovalMarkOf,
  WithdrawDealInput,
} from "../domain/catalog_records.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { PieceDigests } from "./digests.ts";
import type { CidLocks } from "../domain/locks.ts";
import { isManifestType } from "../kernel/manifest_format.ts";
import { manifestListingOf } from "./manifest_listing.ts";
import { pieceCidV2Known } from "../kernel/piece_cid/piece_cid_forms.ts";
import type { AcceptDealInput, AcceptDealOutcome, AcceptUploadInput } from "./catalog_inputs.ts";
import { CidConflictError } from "./catalog_inputs.ts";

export { CidConflictError } from "./catalog_inputs.ts";
export type { AcceptDealInput, AcceptDealOutcome, AcceptUploadInput } from "./catalog_inputs.ts";

export interface CatalogOptions {
  store: PieceStore;
  records: CatalogRecords;
  clock: Clock;
  dealIds: DealIdGenerator;
  digests: PieceDigests;
  /** Commits of one cid run one at a time, in every process that shares the records. */
  cidLocks: CidLocks;
}

export class PieceCatalog {
  readonly #options: CatalogOptions;
  /** Cids whose bytes were committed, their record failed, and no one knows yet if a row names them. */
  readonly #unrecorded = new Set<string>();

  constructor(options: CatalogOptions) {
    this.#options = options;
  }

  getPiece(cid: string): Promise<PieceRecord | null> {
    return this.#options.records.getPiece(cid);
  }

  /** A piece whose recorded PieceCIDv2 or v1 is `pieceCid`, whatever it is stored under. */
  findPieceByPieceCid(pieceCid: string): Promise<PieceRecord | null> {
    return this.#options.records.findPieceByPieceCid(pieceCid);
  }

  getDeal(id: string): Promise<DealRecord | null> {
    return this.#options.records.getDeal(id);
  }

  /**
   * A deal on a piece that is stored already, made without its bytes (POST
   * /api/deals) and charged as an upload of them would be: the piece's size,
   * type and name. A piece marked corrupt makes none (its bytes are not what
   * the cid says until an upload repairs them).
   */
  acceptDeal(input: AcceptDealInput): Promise<AcceptDealOutcome> {
    return this.#options.cidLocks.run(input.cid, async (lost) => {
      const piece = await this.#options.records.getPiece(input.cid);
      // A piece a sweep removed is stored no more: its bytes must be sent again.
      if (piece === null || piece.removedAt !== null) return { kind: "not_stored" };
      if (piece.corruptAt) return { kind: "corrupt" };
      const deal = await this.#recordDeal(input, {
        size: piece.size,
        contentType: piece.contentType,
        filename: piece.filename,
        newPiece: null,
        revivedPiece: null,
        repairedPiece: null,
      }, lost);
      return { kind: "deal", deal };
    });
  }

  /**
   * Lengthens a deal unless its piece was removed meanwhile (then false).
   * Under the cid's lock, as a removal is: a sweep never removes a piece
   * between this check and the longer term it would have had to see.
   */
  extendDeal(deal: DealRecord, addDays: number, termEndsAt: string): Promise<boolean> {
    const { records, cidLocks } = this.#options;
    return cidLocks.run(deal.cid, async (lockLost) => {
      if ((await records.getPiece(deal.cid))?.removedAt !== null) return false;
      stopIfLost(lockLost);
      await records.extendDeal(deal.id, addDays, termEndsAt);
      return true;
    });
  }

  /**
   * Commits a staged upload and records its deal and usage. Throws
   * CidConflictError when the cid holds other bytes. Staged bytes that were
   * not committed are discarded, however it ends.
   */
  /**
   * Takes back a deal just made (records.withdrawDeal: the deal and its usage
   * go); a piece no other deal keeps is removed with it, under its lock, as a
   * sweep removes one. The removal's mark, to finish; null: the piece stays.
   */
  withdrawDeal(input: WithdrawDealInput): Promise<RemovalMarkOf | null> {
    const { records, store, cidLocks } = this.#options;
    return cidLocks.run(input.cid, async () => {
      const mark = await records.withdrawDeal(input);
      if (mark !== null) await store.delete(input.cid);
      return mark;
    });
  }

  async acceptUpload(input: AcceptUploadInput): Promise<DealRecord> {
    try {
      return await this.#options.cidLocks.run(input.cid, (lost) => this.#accept(input, lost));
    } finally {
      // A no-op after a commit; else the staged bytes go (a failure here is cleanup()'s).
      await input.staged.discard().catch(() => {});
    }
  }

  /**
   * Asks again about cids whose record failed after their bytes were
   * committed: removes the bytes of those no row names. Never rejects; what
   * cannot be decided now stays for the next call.
   */
  async settleUnrecorded(): Promise<void> {
    for (const cid of [...this.#unrecorded]) {
      await this.#options.cidLocks.run(cid, (lost) => this.#dropUnrecorded(cid, lost))
        .catch(() => {});
    }
  }

  async #accept(input: AcceptUploadInput, lockLost: AbortSignal): Promise<DealRecord> {
    const { records, clock, digests } = this.#options;
    const existing = await records.getPiece(input.cid);
    let newPiece: PieceRecord | null = null;
    let revivedPiece: PieceRecord | null = null;
    let repairedPiece: { cid: string; sha256: string } | null = null;
    const now = clock.now();
    if (existing?.removedAt) {
      // The removed piece's row is its tombstone: only the same bytes bring it back.
      if (!await this.#sameBytesAs(existing, input)) {
        await input.staged.discard();
        throw new CidConflictError(input.cid);
      }
      await this.#commitNew(input, lockLost);
      revivedPiece = pieceOf(input, now);
    } else if (existing?.corruptAt) {
      repairedPiece = await this.#repair(existing, input, lockLost);
    } else if (existing) {
      let sameBytes: boolean;
      try {
        const [incoming, stored] = await Promise.all([
          input.staged.computeSha256(),
          digests.sha256Of(existing),
        ]);
        sameBytes = incoming === stored;
      } finally {
        await input.staged.discard();
      }
      if (!sameBytes) throw new CidConflictError(input.cid);
    } else {
      await this.#commitNew(input, lockLost);
      newPiece = pieceOf(input, now);
    }
    const committed = newPiece ?? revivedPiece;
    const deal = await this.#recordDeal(input, {
      size: input.staged.size,
      contentType: input.contentType,
      filename: input.filename,
      newPiece,
      revivedPiece,
      repairedPiece,
    }, lockLost);
    // What the cid does not tell is read back from the stored bytes, after the answer (a
    // repaired piece's too: the pass skips pieces marked corrupt).
    const stored = committed ?? (repairedPiece ? existing : null);
    if (stored && (stored.sha256 === null || stored.pieceCidV2 === null)) {
      digests.enqueue(input.cid);
    }
    return deal;
  }

  /** Writes the deal, its usage and what became of the piece in one commit. */
  async #recordDeal(
    input: AcceptDealInput & Pick<AcceptUploadInput, "finishesResumable" | "blocks">,
    what: {
      size: number;
      contentType: string;
      filename: string | null;
      newPiece: PieceRecord | null;
      revivedPiece: PieceRecord | null;
      repairedPiece: { cid: string; sha256: string } | null;
    },
    lockLost: AbortSignal,
  ): Promise<DealRecord> {
    const { records, store, clock, dealIds } = this.#options;
    const now = clock.now();
    const committed = what.newPiece ?? what.revivedPiece;
    const deal: DealRecord = {
      id: dealIds.next(),
      cid: input.cid,
      tier: input.tier,
      ownerSub: input.owner?.sub ?? null,
      ownerName: input.owner?.name ?? null,
      size: what.size,
      contentType: what.contentType,
      filename: what.filename,
      termDays: input.termDays,
      createdAt: toRfc3339(now),
      termEndsAt: toRfc3339(addDays(now, input.termDays)),
      deletedAt: null,
    };
    try {
      const manifestListing = isManifestType(what.contentType)
        ? await manifestListingOf(store, input.cid)
        : null;
      stopIfLost(lockLost);
      await records.recordUpload({
        newPiece: what.newPiece,
        revivedPiece: what.revivedPiece,
        manifestListing,
        repairedPiece: what.repairedPiece,
        deal,
        usage: { subject: input.usageSubject, day: input.usageDay, bytes: what.size },
        reservation: input.reservation,
        blocks: input.blocks,
        finishesResumable: input.finishesResumable,
      });
    } catch (error) {
      // The file must not outlive a row that never appeared (or stayed removed).
      if (committed) await this.#dropUnrecorded(input.cid, lockLost);
      throw error;
    }
    return deal;
  }

  /** Commits bytes no row names as stored: a first upload, or one after a removal. */
  async #commitNew(input: AcceptUploadInput, lockLost: AbortSignal): Promise<void> {
    stopIfLost(lockLost);
    await input.staged.commit(input.cid).catch((error) => {
      // A commit that got no answer may land after all (a copy a silent bucket runs later).
      this.#unrecorded.add(input.cid);
      throw error;
    });
  }

  /**
   * Removes cid's committed bytes if no row names them; when that cannot be
   * known now (the database away, the lock lost), keeps cid for
   * settleUnrecorded. Never rejects.
   */
  async #dropUnrecorded(cid: string, lockLost: AbortSignal): Promise<void> {
    try {
      stopIfLost(lockLost);
      const recorded = await this.#options.records.getPiece(cid);
      stopIfLost(lockLost);
      // Settled once a row names the bytes as stored, or none are there. Bytes just removed
      // are looked for once more: a late copy may still have been on its way.
      const unnamed = recorded === null || recorded.removedAt !== null;
      const removed = unnamed && await this.#options.store.delete(cid);
      if (removed) this.#unrecorded.add(cid);
      else this.#unrecorded.delete(cid);
    } catch {
      this.#unrecorded.add(cid);
    }
  }

  /** Replaces a corrupt piece's file with the upload's bytes if they are the right ones. */
  async #repair(
    existing: PieceRecord,
    input: AcceptUploadInput,
    lockLost: AbortSignal,
  ): Promise<{ cid: string; sha256: string }> {
    const { staged } = input;
    let sha256: string;
    try {
      sha256 = await staged.computeSha256();
    } catch (error) {
      await staged.discard();
      throw error;
    }
    if (!await this.#sameBytesAs(existing, input, sha256)) {
      await staged.discard();
      throw new CidConflictError(input.cid);
    }
    // The rename replaces the corrupt file; readers that have it open keep the old bytes.
    stopIfLost(lockLost);
    await staged.commit(input.cid);
    return { cid: input.cid, sha256 };
  }

  /**
   * Whether the staged bytes are those the row recorded (a corrupt piece's, or a removed one's
   * tombstone): the same size, and the same SHA-256 unless the cid checked them already (or the
   * digest was never known). Hashed unless `sha256` says it; discarded if hashing fails.
   */
  async #sameBytesAs(
    existing: PieceRecord,
    input: AcceptUploadInput,
    sha256?: string,
  ): Promise<boolean> {
    if (input.staged.size !== existing.size) return false;
    if (input.cidVerified === true || existing.sha256 === null) return true;
    try {
      return (sha256 ?? await input.staged.computeSha256()) === existing.sha256;
    } catch (error) {
      await input.staged.discard();
      throw error;
    }
  }
}

/** A commit whose lock was lost stops before it writes (another instance may hold it now). */
function stopIfLost(lockLost: AbortSignal): void {
  if (lockLost.aborted) throw lockLost.reason;
}

/** The row of a piece this upload stores (for the first time, or again after a removal). */
function pieceOf(input: AcceptUploadInput, now: number): PieceRecord {
  return {
    cid: input.cid,
    size: input.staged.size,
    sha256: input.staged.sha256,
    contentType: input.contentType,
    filename: input.filename,
    createdAt: toRfc3339(now),
    corruptAt: null,
    removedAt: null,
    pieceCidV2: pieceCidV2Known(input.cid, input.staged.size),
  };
}
