/**
 * The catalog's records, as the ports every metadata backend implements:
 * pieces (bytes under a cid), deals (who stored what, for how long), daily
 * usage counters and the block index of CAR uploads. They are declared here,
 * not beside an implementation, because the catalog, the upload pipeline and
 * the handlers use them while db/sqlite/ (the single-box default) and
 * db/postgres/ (shared by N instances) implement them, and db/ stands on
 * domain/ and the kernel alone. Both backends pass one conformance suite
 * (tests/conformance/metadata_conformance.ts).
 *
 * Every method is async because a shared database is across a network. The
 * SQLite implementation answers synchronously underneath, which is what lets
 * its in-memory cap ledger stay exact (limits/daily_caps.ts).
 */
import type { DealState, Tier } from "./vocabulary.ts";

export interface PieceRecord {
  cid: string;
  size: number;
  /** Null until the stored bytes have been hashed (uploads do not wait for it). */
  sha256: string | null;
  contentType: string;
  filename: string | null;
  createdAt: string;
  /** When a scrub found the stored bytes wrong or missing; null while they verify. */
  corruptAt: string | null;
  /**
   * When a sweep began removing the bytes because no deal wanted them any more
   * (they are gone, or going); null while they are stored. An upload of the
   * bytes brings the piece back and clears it.
   */
  removedAt: string | null;
  /**
   * The piece's PieceCIDv2 (FRC-0069), by which a storage provider pulls it from
   * /piece/. Known at upload for a cid that is a piece cid (v2, or v1 and the
   * size); computed from the stored bytes afterwards for any other
   * (catalog/digests.ts): null until then. The records keep its v1 beside it.
   */
  pieceCidV2: string | null;
}

export interface DealRecord {
  id: string;
  cid: string;
  tier: Tier;
  ownerSub: string | null;
  /** Who the deal belongs to as shown to people: an e-mail or an EIP-55 address. */
  ownerName: string | null;
  size: number;
  contentType: string;
  filename: string | null;
  termDays: number;
  createdAt: string;
  termEndsAt: string;
  /** When the owner ended the deal (DELETE /api/deals/{id}); null while it runs its term. */
  deletedAt: string | null;
}

export interface UsageRecord {
  subject: string;
  day: string;
  bytes: number;
  uploads: number;
}

export interface RecordUploadInput {
  /** The piece to insert, or null when its bytes were already stored. */
  newPiece: PieceRecord | null;
  /**
   * A piece a sweep removed (or was removing) whose bytes this upload stored
   * again: its row takes these fields, and its removal and corrupt marks and
   * manifest listing go (revivedPiece and newPiece are never both given).
   */
  revivedPiece?: PieceRecord | null;
  /**
   * The cids a manifest uploaded here lists: recorded with the deal, in its
   * transaction, so a sweep never sees the deal without what it keeps.
   */
  manifestListing?: readonly string[] | null;
  /** A piece marked corrupt whose bytes this upload rewrote: the mark goes, the digest is set. */
  repairedPiece?: { cid: string; sha256: string } | null;
  deal: DealRecord;
  usage: { subject: string; day: string; bytes: number };
  /**
   * The cap reservation this upload held. The same commit that adds the bytes
   * to the counter settles it, so the bytes are never counted twice (which
   * would refuse an upload that fits) nor not at all.
   */
  reservation?: SettledReservation | null;
  /**
   * The blocks of a CAR upload, indexed under the deal's piece and seen only
   * once the piece is recorded (a block already indexed there is kept as it
   * is). A backend may write them before the commit, in slices, so that no
   * large CAR holds the event loop (db/sqlite/block_records.ts).
   */
  blocks?: BlockLocations | null;
  /**
   * The resumable upload whose last byte this was: marked finished (with the
   * deal) in the same commit, so a crash can never leave a deal made and its
   * upload still waiting for bytes, holding a reservation that was settled.
   */
  finishesResumable?: {
    id: string;
    fromBytes: number;
    expiresMs: number;
    /** A CAR's roots, for the finished upload's result (null: not a CAR). */
    roots: string[] | null;
  } | null;
}

/**
 * Where blocks lie in a piece's bytes, by multihash (ipfs/block_list.ts is
 * one), best in multihash order: the order the index's B-tree keeps them in.
 */
export type BlockLocations = Iterable<{ multihash: Uint8Array; offset: number; length: number }>;

/** A block found in the index: which piece holds it and where. */
export interface StoredBlock {
  pieceCid: string;
  offset: number;
  length: number;
}

/** The block index: the blocks of CAR uploads, for the IPFS gateway. */
export interface BlockRecords {
  /**
   * Where a block with this multihash (code, length and digest, as in a cid)
   * lies in a piece that is stored and not marked corrupt; null when in none.
   */
  findBlock(multihash: Uint8Array): Promise<StoredBlock | null>;
  /** How many blocks are indexed in a piece (0 for a piece that is not a CAR). */
  countBlocks(pieceCid: string): Promise<number>;
}

/**
 * recordUpload found its resumable upload finished already, or appended to by
 * another writer since `fromBytes`: nothing was recorded.
 */
export class ResumableUploadMovedError extends Error {
  constructor(id: string) {
    super(`Cannot finish resumable upload ${id}: it changed meanwhile`);
    this.name = "ResumableUploadMovedError";
  }
}

/** What recordUpload needs of a cap reservation (domain/cap_ledger.ts: Reservation is one). */
export interface SettledReservation {
  readonly id: string;
  /** Called right after the commit, in the same synchronous step: forget it, release nothing. */
  markSettled(): void;
}

/** Which of a user's deals listDeals returns: all, or those in one state at an instant. */
export interface DealFilter {
  state: DealState;
  /** The instant the state is judged at (RFC 3339). */
  now: string;
}

export interface ListDealsOptions {
  beforeId: string | null;
  limit: number;
  /** Only deals in this state; absent or null: every deal. */
  filter?: DealFilter | null;
  /** Only deals on this cid; absent or null: every cid. */
  cid?: string | null;
}

export interface WithdrawDealInput {
  dealId: string;
  cid: string;
  usage: { subject: string; day: string; bytes: number };
  /** When the piece's removal begins (RFC 3339). */
  at: string;
}

/** A removal mark (domain/lifecycle_records.ts: RemovalMark). */
export interface RemovalMarkOf {
  mark: number;
  cid: string;
}

/** Pieces, deals and daily usage counters. */
export interface CatalogRecords {
  /** A user's deals (on one cid, when given), newest first, strictly older than beforeId when given. */
  listDeals(ownerSub: string, options: ListDealsOptions): Promise<DealRecord[]>;
  getDeal(id: string): Promise<DealRecord | null>;
  extendDeal(id: string, addDays: number, termEndsAt: string): Promise<void>;
  /** Ends a deal at `at` (its owner deleted it); a deal deleted already keeps its time. */
  deleteDeal(id: string, at: string): Promise<void>;
  /**
   * Takes back a deal just made, as if never made (an upload answered 502
   * stage_failed: the storage provider refused its piece): the deal and the
   * usage it counted go, in one transaction; if no other deal keeps its piece
   * nor a manifest lists it, the piece is marked as being removed in the same
   * transaction, and its mark returned (the caller deletes the bytes and
   * finishes it, as a sweep does). Null: the piece stays.
   */
  withdrawDeal(input: WithdrawDealInput): Promise<RemovalMarkOf | null>;
  /** Usage rows of a subject between two days (inclusive); days without uploads are absent. */
  usageBetween(subject: string, from: string, to: string): Promise<UsageRecord[]>;
  getPiece(cid: string): Promise<PieceRecord | null>;
  /** Records a piece's digest once it is known; a digest already recorded is never replaced. */
  setPieceSha256(cid: string, sha256: string): Promise<void>;
  /** Cids of pieces whose digest is still unknown (after a restart, say). */
  piecesWithoutSha256(): Promise<string[]>;
  /**
   * Records a piece's PieceCIDv2 (and its v1, for finding it by that) once it is
   * known; one already recorded is never replaced.
   */
  setPieceCidV2(cid: string, pieceCidV2: string): Promise<void>;
  /** Cids of pieces still stored whose PieceCIDv2 is unknown (stored before it was recorded, say). */
  piecesWithoutPieceCidV2(): Promise<string[]>;
  /**
   * A piece whose recorded PieceCIDv2 or PieceCIDv1 is `pieceCid`, whatever cid it
   * is stored under; one stored and not marked corrupt first, then the oldest.
   * Null when none (or its PieceCIDv2 is not known yet).
   */
  findPieceByPieceCid(pieceCid: string): Promise<PieceRecord | null>;
  /** Up to `limit` pieces with cids after `afterCid`, in cid order: a scrub's (or a copy's) pages. */
  piecesAfter(afterCid: string, limit: number): Promise<PieceRecord[]>;
  /** Marks a piece's bytes as failing verification; false if it was marked already. */
  markPieceCorrupt(cid: string, at: string, problem: string): Promise<boolean>;
  /** Clears the mark set at `markedAt` (bytes verify again); false if it changed meanwhile. */
  clearPieceCorrupt(cid: string, markedAt: string): Promise<boolean>;
  /**
   * Marks made after `mark` (a position from an earlier answer; 0 for all), oldest
   * first, at most 1000: a poller reads only what is new, however many there are.
   */
  corruptMarksAfter(mark: number): Promise<{ mark: number; cid: string }[]>;
  corruptPieceCids(): Promise<string[]>;
  /** How many pieces are stored (removed ones aside) and their bytes (the gauges cache it). */
  storedTotals(): Promise<{ pieces: number; bytes: number }>;
  /** Bytes a subject has uploaded on a UTC day (0 when nothing). */
  usedBytes(subject: string, day: string): Promise<number>;
  /** Inserts the piece (if new), the deal and the usage increment atomically. */
  recordUpload(input: RecordUploadInput): Promise<void>;
}
