// deno-lint-ignore-file require-await -- CapLedger is async for shared databases; this one answers from memory at once.
/**
 * The daily-cap ledger of the single-box default, in one process's memory
 * (the port, and why caps are reserved at all: domain/cap_ledger.ts). Right
 * where one process owns the data directory: if it dies, the uploads its
 * reservations stood for died with it, and the resumable uploads' records
 * name their lasting reservations so a restart holds them again. Instances
 * that share a Postgres database reserve in the database instead
 * (db/postgres/cap_ledger.ts).
 */
import { utcDay } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { releaseOnce } from "./release_once.ts";
import { capStatusOf } from "../domain/cap_ledger.ts";
import type * as Caps from "../domain/cap_ledger.ts";

export interface DailyCapLedgerOptions {
  clock: Clock;
  /**
   * Bytes already counted for a subject on a day (the persistent counter),
   * answered synchronously: check and reserve happen in one synchronous step.
   */
  usedBytes(subject: string, day: string): number;
}

export class DailyCapLedger implements Caps.CapLedger {
  readonly #options: DailyCapLedgerOptions;
  readonly #reserved = new Map<string, number>();
  /** Lasting reservations by id, so holding one again never counts it twice. */
  readonly #lasting = new Map<string, Caps.Reservation>();

  constructor(options: DailyCapLedgerOptions) {
    this.#options = options;
  }

  async status(subject: string, capBytes: number): Promise<Caps.CapStatus> {
    return this.#statusNow(subject, capBytes);
  }

  #statusNow(subject: string, capBytes: number): Caps.CapStatus {
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
    options: Caps.ReserveOptions = {},
  ): Promise<Caps.ReserveResult> {
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
  holdAgain(held: Caps.HeldReservation): Caps.Reservation {
    const known = this.#lasting.get(held.id);
    if (known) return known;
    const reservation = this.#hold(held);
    this.#lasting.set(held.id, reservation);
    return reservation;
  }

  /** Counts the bytes as reserved; the handle gives them back once. */
  #hold(held: Caps.HeldReservation): Caps.Reservation {
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

function keyOf(subject: string, day: string): string {
  return `${day}\u0000${subject}`;
}
