/**
 * Daily caps with reservations. Before an upload reads a byte, its declared
 * length is reserved against the subject's cap for the current UTC day:
 * used (in SQLite) + reserved (in memory, for uploads in flight) + length
 * must fit. Parallel uploads therefore cannot jointly exceed a cap. A failed
 * upload releases its reservation; a successful one releases it after the
 * bytes were added to the persistent counter in the deal's transaction.
 *
 * Reservations live in memory on purpose: if the process dies, the uploads
 * they stood for died with it, so there is nothing to release after a restart.
 */
import { nextUtcMidnight, utcDay } from "../clock.ts";
import type { Clock } from "../clock.ts";

export interface Reservation {
  readonly subject: string;
  readonly day: string;
  readonly bytes: number;
  /** Gives the reserved bytes back. Idempotent. */
  release(): void;
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

export interface DailyCapLedgerOptions {
  clock: Clock;
  /** Bytes already counted for a subject on a day (the persistent counter). */
  usedBytes(subject: string, day: string): number;
}

export class DailyCapLedger {
  readonly #options: DailyCapLedgerOptions;
  readonly #reserved = new Map<string, number>();

  constructor(options: DailyCapLedgerOptions) {
    this.#options = options;
  }

  /** The cap status of a subject right now, reservations included. */
  status(subject: string, capBytes: number): CapStatus {
    const now = this.#options.clock.now();
    const day = utcDay(now);
    const usedBytes = this.#options.usedBytes(subject, day);
    const reservedBytes = this.#reserved.get(keyOf(subject, day)) ?? 0;
    return {
      capBytes,
      usedBytes,
      reservedBytes,
      remainingBytes: Math.max(0, capBytes - usedBytes - reservedBytes),
      resetSeconds: Math.max(1, Math.ceil((nextUtcMidnight(now) - now) / 1000)),
      day,
    };
  }

  /**
   * Reserves bytes if they fit under the cap. Synchronous from check to
   * reserve, so two requests can never both see the same free space.
   */
  reserve(subject: string, bytes: number, capBytes: number): ReserveResult {
    const status = this.status(subject, capBytes);
    if (status.usedBytes + status.reservedBytes + bytes > capBytes) return { ok: false, status };
    const key = keyOf(subject, status.day);
    this.#reserved.set(key, status.reservedBytes + bytes);
    let released = false;
    const reservation: Reservation = {
      subject,
      day: status.day,
      bytes,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#reserved.get(key) ?? 0) - bytes;
        if (left > 0) this.#reserved.set(key, left);
        else this.#reserved.delete(key);
      },
    };
    const after = { ...status, reservedBytes: status.reservedBytes + bytes };
    after.remainingBytes = Math.max(0, capBytes - after.usedBytes - after.reservedBytes);
    return { ok: true, reservation, status: after };
  }

  /** Bytes currently reserved by uploads in flight (all subjects). */
  get reservedTotal(): number {
    let total = 0;
    for (const bytes of this.#reserved.values()) total += bytes;
    return total;
  }
}

function keyOf(subject: string, day: string): string {
  return `${day}\u0000${subject}`;
}
