/**
 * What the service keeps besides the bytes, as interfaces every metadata
 * backend implements: SQLite (db/sqlite/, the single-box default) and
 * PostgreSQL (db/postgres/, shared by N instances). Both pass the same
 * conformance suite (tests/conformance/metadata_conformance.ts).
 *
 * Every method is async because a shared database is across a network. The
 * SQLite implementation answers synchronously underneath, which is what lets
 * its in-memory cap ledger stay exact (limits/daily_caps.ts).
 */
import type { DealState, Tier } from "../domain/vocabulary.ts";

// The records auth/ keeps through (tokens, signup codes, sign-in nonces) are declared in
// domain/vocabulary.ts, which both auth/ and db/ import; named here too, beside the catalog's.
export type { SignupCodeRecords, TokenRecords, WalletNonceRecords } from "../domain/vocabulary.ts";

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
   * The blocks of a CAR upload, indexed under the deal's piece in the same
   * transaction (a block already indexed there is kept as it is).
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

/** Where blocks lie in a piece's bytes, by multihash (ipfs/block_list.ts is one). */
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

/** What recordUpload needs of a cap reservation (limits/daily_caps.ts: Reservation). */
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

/** Pieces, deals and daily usage counters. */
export interface CatalogRecords {
  /** A user's deals (on one cid, when given), newest first, strictly older than beforeId when given. */
  listDeals(ownerSub: string, options: ListDealsOptions): Promise<DealRecord[]>;
  getDeal(id: string): Promise<DealRecord | null>;
  extendDeal(id: string, addDays: number, termEndsAt: string): Promise<void>;
  /** Ends a deal at `at` (its owner deleted it); a deal deleted already keeps its time. */
  deleteDeal(id: string, at: string): Promise<void>;
  /** Usage rows of a subject between two days (inclusive); days without uploads are absent. */
  usageBetween(subject: string, from: string, to: string): Promise<UsageRecord[]>;
  getPiece(cid: string): Promise<PieceRecord | null>;
  /** Records a piece's digest once it is known; a digest already recorded is never replaced. */
  setPieceSha256(cid: string, sha256: string): Promise<void>;
  /** Cids of pieces whose digest is still unknown (after a restart, say). */
  piecesWithoutSha256(): Promise<string[]>;
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

/**
 * What garbage collection keeps (catalog/piece_removal.ts, ops/gc.ts). A
 * piece may go once every deal on it, and every deal on a manifest listing
 * it, ended at or before `endedBy` (now less the grace period); a deal ends
 * at its termEndsAt, or when it was deleted if that came first. A piece
 * without any deal is left alone: nothing says how long it was wanted.
 *
 * Removal is crash-safe in three steps: beginRemovals marks the piece (re-
 * checking the rule in its transaction; retrieval answers 410 from then on),
 * then its bytes are deleted, then finishRemovals marks it removed. A sweep
 * that dies between them leaves marks that unfinishedRemovals finds again.
 */
export interface LifecycleRecords {
  /**
   * Up to `limit` pieces after `afterCid` in cid order, each with whether it
   * may be removed (a removed one may not): a sweep's page. Pages are cut by
   * pieces read, not by pieces found, so each page costs the same.
   */
  sweepPage(afterCid: string, endedBy: string, limit: number): Promise<SweepPageRow[]>;
  /**
   * Marks each of `cids` as being removed if it still may be, in one
   * transaction with that check: the marks of those marked; a cid a deal
   * wants again, without a row, or marked already is left out. A marked
   * piece's indexed blocks (BlockRecords) go in the same transaction: a
   * block lives while its piece does, and /ipfs/ never reads a removing one.
   */
  beginRemovals(cids: readonly string[], endedBy: string, at: string): Promise<RemovalMark[]>;
  /** Whether a removal mark is still unfinished (a re-upload deletes it). */
  isRemovalPending(mark: number): Promise<boolean>;
  /** Marks removals finished (the bytes are gone); marks a re-upload deleted are skipped. */
  finishRemovals(marks: readonly number[], at: string): Promise<void>;
  /** Removals begun and not finished (a sweep died in between), oldest first. */
  unfinishedRemovals(): Promise<RemovalMark[]>;
  /**
   * Removal marks made after `mark` (0 for all), oldest first, at most 1000:
   * a server polls them to stop answering removed pieces from memory.
   */
  removalMarksAfter(mark: number): Promise<RemovalMark[]>;
  /** The newest removal mark (0 when none): where a poller starting now begins. */
  lastRemovalMark(): Promise<number>;
  /** Those of `cids` that name a stored piece (a row, not removed): the rest are orphans. */
  storedAmong(cids: readonly string[]): Promise<string[]>;
  /** Pieces (and their bytes) that may be removed now but are not yet: the backlog. */
  removalBacklog(endedBy: string): Promise<{ pieces: number; bytes: number }>;
  /**
   * Up to `limit` stored pieces with a deal typed as a manifest whose listing
   * is not recorded (uploaded before the listings were), for a sweep to read.
   */
  unlistedManifests(limit: number): Promise<string[]>;
  /** Records what a manifest lists (the manifest itself too, which marks it as read). */
  recordManifestListing(manifestCid: string, pieceCids: readonly string[]): Promise<void>;
  /** The last sweep that finished, or null. */
  lastSweep(): Promise<SweepRecord | null>;
  recordSweep(sweep: SweepRecord): Promise<void>;
}

/** A removal's number (it orders removals for pollers) and its piece. */
export interface RemovalMark {
  mark: number;
  cid: string;
}

export interface SweepPageRow {
  cid: string;
  size: number;
  removable: boolean;
}

/** A finished sweep, as /healthz and the start-up summary show the last one. */
export interface SweepRecord {
  startedAt: string;
  finishedAt: string;
  removedPieces: number;
  removedBytes: number;
  removedOrphans: number;
}

/**
 * A resumable (tus) upload: its terms, fixed when it was created, and how far
 * it got. The bytes themselves are the store's (driver.ts: PartialStore).
 */
export interface ResumableUploadRecord {
  /** 32 hex digits: the last segment of its URL. */
  id: string;
  cid: string;
  /** Upload-Length: the bytes the upload will have. */
  length: number;
  /** Bytes received and stored so far (Upload-Offset). */
  received: number;
  contentType: string;
  filename: string | null;
  /** The Upload-Metadata header as created, which HEAD answers with. */
  metadata: string;
  tier: Tier;
  /** Who may continue or end it, and whose counter it is charged to: "user:<sub>", "ip:<client>". */
  usageSubject: string;
  ownerSub: string | null;
  ownerName: string | null;
  termDays: number;
  /** The cap reservation of its length, held until it finishes, ends or expires. */
  reservationId: string;
  reservationDay: string;
  /** The store's description of the partial bytes (JSON; PartialStore says what). */
  staging: string;
  createdAt: string;
  /** When it is removed: 24 h after its last byte (a finished one: after it finished). */
  expiresMs: number;
  /** The deal its last byte made; null until then. */
  dealId: string | null;
  /** A finished CAR upload's roots, for its result; null otherwise. */
  roots: string[] | null;
}

/** Resumable uploads in flight (and finished ones, for a day, for their result). */
export interface ResumableUploadRecords {
  insert(record: ResumableUploadRecord): Promise<void>;
  get(id: string): Promise<ResumableUploadRecord | null>;
  /**
   * Records appended bytes, only while `received` is still `fromBytes`: of two
   * writers that appended at the same offset, one wins and the other is told.
   */
  advance(
    id: string,
    update: { fromBytes: number; received: number; staging: string; expiresMs: number },
  ): Promise<boolean>;
  /** Removes an upload; false when it was gone already. */
  delete(id: string): Promise<boolean>;
  /** Up to `limit` uploads whose expiresMs is before nowMs, oldest first. */
  expiredBefore(nowMs: number, limit: number): Promise<ResumableUploadRecord[]>;
  /** Uploads still waiting for bytes, up to `limit` with ids after `afterId` (id order). */
  unfinishedAfter(afterId: string, limit: number): Promise<ResumableUploadRecord[]>;
}
