// deno-lint-ignore-file require-await -- CapLedger is async for shared databases; this one answers from memory at once.
/**
 * Daily caps with reservations. Before an upload reads a byte, its declared
 * length is reserved against the subject's cap for the current UTC day:
 * used (the persistent counter) + reserved (uploads in flight) + length must
 * fit. Parallel uploads therefore cannot jointly exceed a cap. A failed
 * upload releases its reservation; a successful one releases it after the
 * bytes were added to the persistent counter in the deal's transaction.
 *
 * `CapLedger` is what uploads see. This file's DailyCapLedger keeps the
 * reservations in one process's memory: right for the single-box default,
 * where one process owns the data directory (if it dies, the uploads its
 * reservations stood for died with it). Instances that share a Postgres
 * database reserve in the database instead (db/postgres/cap_ledger.ts).
 */
import { nextUtcMidnight, utcDay } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { releaseOnce } from "./release_once.ts";

export interface Reservation {
  /** Names the reservation to the commit that settles it (db/records.ts: recordUpload). */
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

export interface DailyCapLedgerOptions {
  clock: Clock;
  /**
   * Bytes already counted for a subject on a day (the persistent counter),
   * answered synchronously: check and reserve happen in one synchronous step.
   */
  usedBytes(subject: string, day: string): number;
}

export class DailyCapLedger implements CapLedger {
  readonly #options: DailyCapLedgerOptions;
  readonly #reserved = new Map<string, number>();
  /** Lasting reservations by id, so holding one again never counts it twice. */
  readonly #lasting = new Map<string, Reservation>();

  constructor(options: DailyCapLedgerOptions) {
    this.#options = options;
  }

  async status(subject: string, capBytes: number): Promise<CapStatus> {
    return this.#statusNow(subject, capBytes);
  }

  #statusNow(subject: string, capBytes: number): CapStatus {
    const now = this.#options.clock.now();
    const day = utcDay(now);
    return capStatusOf({
      now,
      capBytes,
      usedBytes: this.#options.usedBytes(subject, day),
      reservedBytes: this.#reserved.get(keyOf(subject, day)) ?? 0,
    });
  }

  /**
   * Reserves bytes if they fit under the cap. Synchronous from check to
   * reserve, so two requests can never both see the same free space.
   */
  async reserve(
    subject: string,
    bytes: number,
    capBytes: number,
    options: ReserveOptions = {},
  ): Promise<ReserveResult> {
    const status = this.#statusNow(subject, capBytes);
    if (status.usedBytes + status.reservedBytes + bytes > capBytes) return { ok: false, status };
    const reservation = this.#hold({ id: crypto.randomUUID(), subject, day: status.day, bytes });
    if (options.lasting) this.#lasting.set(reservation.id, reservation);
    const after = { ...status, reservedBytes: status.reservedBytes + bytes };
    after.remainingBytes = Math.max(0, capBytes - after.usedBytes - after.reservedBytes);
    return { ok: true, reservation, status: after };
  }

  /**
   * A lasting reservation, held again: after a restart, the resumable uploads'
   * records name what this process's memory lost (resumable/ does that at start).
   */
  holdAgain(held: HeldReservation): Reservation {
    const known = this.#lasting.get(held.id);
    if (known) return known;
    const reservation = this.#hold(held);
    this.#lasting.set(held.id, reservation);
    return reservation;
  }

  /** Counts the bytes as reserved; the handle gives them back once. */
  #hold(held: HeldReservation): Reservation {
    const key = keyOf(held.subject, held.day);
    this.#reserved.set(key, (this.#reserved.get(key) ?? 0) + held.bytes);
    const releaseNow = releaseOnce(() => {
      this.#lasting.delete(held.id);
      const left = (this.#reserved.get(key) ?? 0) - held.bytes;
      if (left > 0) this.#reserved.set(key, left);
      else this.#reserved.delete(key);
    });
    return {
      ...held,
      release: async () => releaseNow(),
      // In memory, settling is releasing: the counter in SQLite already has the bytes.
      markSettled: releaseNow,
    };
  }

  async reservedTotal(): Promise<number> {
    let total = 0;
    for (const bytes of this.#reserved.values()) total += bytes;
    return total;
  }
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

function keyOf(subject: string, day: string): string {
  return `${day}\u0000${subject}`;
}
