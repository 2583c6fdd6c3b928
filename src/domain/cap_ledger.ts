/**
 * The daily-cap ledger, as the port uploads reserve through. Before an upload
 * reads a byte, its declared length is reserved against the subject's cap for
 * the current UTC day: used (the persistent counter) + reserved (uploads in
 * flight) + length must fit, so parallel uploads cannot jointly exceed a cap.
 * A failed upload releases its reservation; a successful one settles it in
 * the deal's own transaction (CatalogRecords.recordUpload), which adds the
 * bytes to the persistent counter.
 *
 * Declared here because two ledgers implement it on either side of db/'s
 * wall: the in-memory one of the single-box default (limits/daily_caps.ts)
 * and PostgreSQL's, shared by N instances (db/postgres/cap_ledger.ts); both
 * answer a cap's status through capStatusOf.
 */
import { nextUtcMidnight, utcDay } from "../kernel/clock.ts";
import type { SettledReservation } from "./catalog_records.ts";

export interface Reservation extends SettledReservation {
  /** Names the reservation to the commit that settles it (CatalogRecords.recordUpload). */
  readonly id: string;
  readonly subject: string;
  readonly day: string;
  readonly bytes: number;
  /** Gives the reserved bytes back. Idempotent; never rejects. */
  release(): Promise<void>;
  /**
   * The deal's commit moved the bytes into the persistent counter: the
   * reservation is gone with it (a later release does nothing). Synchronous,
   * so nobody sees the bytes counted twice in between.
   */
  markSettled(): void;
}

export interface CapStatus {
  capBytes: number;
  usedBytes: number;
  reservedBytes: number;
  remainingBytes: number;
  /** Seconds until the cap resets at 00:00 UTC (at least 1). */
  resetSeconds: number;
  day: string;
}

export type ReserveResult =
  | { ok: true; reservation: Reservation; status: CapStatus }
  | { ok: false; status: CapStatus };

/** A reservation made earlier, as a resumable upload's record names it. */
export interface HeldReservation {
  id: string;
  subject: string;
  day: string;
  bytes: number;
}

export interface ReserveOptions {
  /**
   * The reservation outlives the request and this process: a resumable
   * upload's, held until the upload finishes, ends or expires, and found
   * again with `holdAgain` (default: it lasts as long as the upload request).
   */
  lasting?: boolean;
}

export interface CapLedger {
  /** The cap status of a subject right now, reservations included. */
  status(subject: string, capBytes: number): Promise<CapStatus>;
  /** Reserves bytes if they fit under the cap, atomically with the check. */
  reserve(
    subject: string,
    bytes: number,
    capBytes: number,
    options?: ReserveOptions,
  ): Promise<ReserveResult>;
  /**
   * The reservation a lasting `reserve` made (in this process or another, before
   * a restart or after), to release or settle. Holding it again is idempotent.
   */
  holdAgain(held: HeldReservation): Reservation;
  /** Bytes currently reserved by uploads in flight (all subjects). */
  reservedTotal(): Promise<number>;
}

/** A cap's status at `now` (ms) from its counters; every ledger answers through this. */
export function capStatusOf(
  input: { now: number; capBytes: number; usedBytes: number; reservedBytes: number },
): CapStatus {
  const { now, capBytes, usedBytes, reservedBytes } = input;
  return {
    capBytes,
    usedBytes,
    reservedBytes,
    remainingBytes: Math.max(0, capBytes - usedBytes - reservedBytes),
    resetSeconds: Math.max(1, Math.ceil((nextUtcMidnight(now) - now) / 1000)),
    day: utcDay(now),
  };
}
