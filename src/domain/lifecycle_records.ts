/**
 * The lifecycle's records, as a port: deal ends, removals in three crash-safe
 * steps, manifest listings and the last sweep, which garbage collection
 * (catalog/piece_removal.ts, ops/gc.ts) works through and each metadata
 * backend implements (db/sqlite/, db/postgres/). A port of its own because
 * only the sweep, its pollers and the start-up summary need it, not every
 * user of the catalog's records (domain/catalog_records.ts).
 */

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
