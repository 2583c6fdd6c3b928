/**
 * The hand-off's records, as a port (src/handoff/ works through it; db/sqlite/
 * and db/postgres/ implement it): where each piece stands with its storage
 * provider, every call made to the provider with the body it was sent with,
 * and the service's data set there. Everything the worker learns is written
 * here before it acts on it, so a restart or a kill at any point resumes the
 * hand-off where it stood: a pull is re-sent with its recorded body (the
 * provider answers the same pull), an add is re-polled at its recorded
 * Location, and a piece belongs to at most one open call, so it is never
 * added twice (docs/handoff.md).
 */

import { HANDOFF_STATES } from "../kernel/wire.ts";

export { HANDOFF_STATES };

export type HandoffState = typeof HANDOFF_STATES[number];

/** One stored piece's hand-off. */
export interface HandoffPiece {
  /** The piece's cid as stored here (the catalog's key). */
  cid: string;
  /** The provider's service URL. */
  provider: string;
  state: HandoffState;
  size: number;
  /** The name the provider knows it by; null until computed (opaque uploads). */
  pieceCidV2: string | null;
  dataSetId: number | null;
  pieceId: number | null;
  /** The transaction that added it (live) or scheduled its removal (removing, removed). */
  txHash: string | null;
  /** What is known of why it failed, or why it is ineligible. */
  error: string | null;
  /** The open call (pull, add, remove) it belongs to, or null. */
  callId: string | null;
  queuedAt: number;
  updatedAt: number;
}

export type HandoffCallKind = "create" | "pull" | "add" | "remove";

/** A call to the provider: opened (with its body) before it is sent, closed once settled. */
export interface HandoffCall {
  id: string;
  provider: string;
  kind: HandoffCallKind;
  /** The request body as sent (JSON): a restart sends or polls the same one. */
  body: string;
  /** Where its progress is polled (create and add: the answer's Location). */
  statusUrl: string | null;
  txHash: string | null;
  /** How often it was sent and refused (5xx, rejected): after a few, it is reconciled. */
  refusals: number;
  /**
   * Set when the call's outcome is in doubt (refused after a send that may
   * have reached the chain): its pieces are looked for in the data set until
   * this instant passes, and only then sent again under a new call.
   */
  reconcileUntil: number | null;
  openedAt: number;
}

/** The service's data set at a provider. */
export interface HandoffDataSet {
  provider: string;
  /** The clientDataSetId it was signed with (a decimal uint256): single-use per payer. */
  clientDataSetId: string;
  /** The provider's id once the creation is recorded on chain; null before. */
  dataSetId: number | null;
  /** The creation call while it is open. */
  callId: string | null;
}

export interface HandoffCounts {
  state: HandoffState;
  pieces: number;
  bytes: number;
}

/** What moves a piece: fields to set, and only from these states (a piece elsewhere is left). */
export interface HandoffMove {
  from: readonly HandoffState[];
  to: HandoffState;
  at: number;
  callId?: string | null;
  dataSetId?: number | null;
  pieceId?: number | null;
  txHash?: string | null;
  error?: string | null;
}

export interface HandoffRecords {
  /**
   * Queues pieces an active deal keeps (a deal on the piece whose term has
   * not ended and that is not deleted, at `now`) and that have no hand-off
   * yet, or whose hand-off was removed: `cids` (those just committed), or any
   * (a scan, up to `limit`). Pieces outside the provider's size limits are
   * recorded `ineligible`. Returns how many rows were written.
   */
  enqueue(
    input: { provider: string; now: number; cids?: readonly string[]; limit: number },
  ): Promise<number>;
  get(cid: string): Promise<HandoffPiece | null>;
  getMany(cids: readonly string[]): Promise<Map<string, HandoffPiece>>;
  /** Up to `limit` queued pieces whose PieceCIDv2 is known, oldest first. */
  readyToPull(limit: number): Promise<HandoffPiece[]>;
  /** Up to `limit` pieces in `state` outside any call, oldest first. */
  idle(state: HandoffState, limit: number): Promise<HandoffPiece[]>;
  /** Live pieces no active deal keeps any more (at `now`): to remove at the provider. */
  unkept(now: number, limit: number): Promise<HandoffPiece[]>;
  /** Pieces in `state` (any call), oldest first, after `afterCid`: the operator's list. */
  inState(state: HandoffState, afterCid: string, limit: number): Promise<HandoffPiece[]>;
  /** Moves each of `cids` found in `move.from`; returns how many moved. */
  move(cids: readonly string[], move: HandoffMove): Promise<number>;

  /** Records a call and moves its pieces into it (state `pieceState`), in one transaction. */
  openCall(call: HandoffCall, cids: readonly string[], pieceState: HandoffState): Promise<void>;
  /** The answer of a create or an add: where to poll it. */
  setCallStatus(id: string, statusUrl: string, txHash: string | null): Promise<void>;
  updateCall(
    id: string,
    update: { refusals: number; reconcileUntil: number | null },
  ): Promise<void>;
  /** Closes a call; pieces still in it leave it. */
  closeCall(id: string, at: number): Promise<void>;
  openCalls(kind: HandoffCallKind): Promise<HandoffCall[]>;
  piecesOfCall(callId: string): Promise<HandoffPiece[]>;

  dataSet(provider: string): Promise<HandoffDataSet | null>;
  saveDataSet(dataSet: HandoffDataSet): Promise<void>;

  /** Pieces and bytes by state, and when the oldest queued piece was queued (null: none). */
  counts(): Promise<{ byState: HandoffCounts[]; oldestQueuedAt: number | null }>;
}

/** The provider takes pieces of at least 127 bytes … */
export const HANDOFF_MIN_BYTES = 127;
/** … and at most 1 GiB of padded piece (1,065,353,216 bytes of payload). */
export const HANDOFF_MAX_BYTES = 1_065_353_216;
/** Why a piece outside those limits stays here (no quote marks: it is an SQL literal too). */
export const INELIGIBLE_REASON =
  "the provider takes pieces of 127 to 1,065,353,216 bytes; this one stays here only";
