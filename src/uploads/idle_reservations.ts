/**
 * A sponsored resumable upload that sends nothing for IDLE_RESERVATION_MS
 * lets its cap reservation go until its next byte: before, two header-only
 * creations of 100 MiB held a shared address's daily cap for a day, and a
 * neighbour behind the same NAT got 429 until midnight. The next byte takes
 * the reservation again if the upload's length still fits today's cap (429
 * rate_limited otherwise; the upload keeps what it has).
 *
 * Kept in this instance's memory (when each upload last got bytes, and which
 * let their reservation go): a restart holds every unfinished upload's
 * reservation again (holdAllAgain), which is the safe side.
 */
import type { CapLedger, Reservation } from "../domain/cap_ledger.ts";
import type {
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../domain/resumable_upload_records.ts";
import type { Clock } from "../kernel/clock.ts";
import { ResumableError } from "./resumable_outcomes.ts";
import type { UploadLocks } from "./upload_locks.ts";

/** A sponsored upload that sends nothing this long lets its reservation go until its next byte. */
export const IDLE_RESERVATION_MS = 10 * 60_000;

export interface IdleReservationsOptions {
  records: ResumableUploadRecords;
  ledger: CapLedger;
  clock: Clock;
  /** The uploads' request locks: an upload with a request under way is not idle. */
  locks: UploadLocks;
  /** The cap a released reservation is taken again under. */
  sponsoredDailyCapBytes: number;
  /** The upload's reservation, held (again) in the ledger. */
  reservationOf(upload: ResumableUploadRecord): Reservation;
}

export class IdleReservations {
  readonly #options: IdleReservationsOptions;
  readonly #lastBytes = new Map<string, number>();
  readonly #released = new Set<string>();

  constructor(options: IdleReservationsOptions) {
    this.#options = options;
  }

  /**
   * Holds the reservations of the uploads still waiting for bytes again: a data
   * directory's ledger lost them with the last process (a shared database's
   * ledger kept them; holding them again changes nothing there).
   */
  async holdAllAgain(): Promise<number> {
    let held = 0;
    for (let after = "";;) {
      const page = await this.#options.records.unfinishedAfter(after, 500);
      for (const upload of page) this.#options.reservationOf(upload);
      held += page.length;
      if (page.length < 500) return held;
      after = page[page.length - 1].id;
    }
  }

  /** The upload got bytes (or was created) at `nowMs`. */
  touched(id: string, nowMs: number): void {
    this.#lastBytes.set(id, nowMs);
  }

  /** The upload is gone; true if its reservation had been let go (nothing to release). */
  forget(id: string): boolean {
    this.#lastBytes.delete(id);
    return this.#released.delete(id);
  }

  /** Lets go of the reservations of sponsored uploads idle for IDLE_RESERVATION_MS; how many. */
  async releaseIdle(): Promise<number> {
    const { clock, locks, records, reservationOf } = this.#options;
    const now = clock.now();
    let released = 0;
    for (const [id, at] of [...this.#lastBytes]) {
      if (now - at < IDLE_RESERVATION_MS || this.#released.has(id)) continue;
      const lock = await locks.tryAcquire(id);
      if (lock === null) continue; // a request is under way (left alone): not idle
      try {
        const upload = await records.get(id);
        if (upload === null || upload.dealId !== null) {
          this.#lastBytes.delete(id);
          continue;
        }
        if (upload.tier !== "sponsored") continue;
        await reservationOf(upload).release();
        this.#released.add(id);
        released++;
      } finally {
        lock.release();
      }
    }
    return released;
  }

  /** The upload with its reservation taken again if idling let it go (429 if it no longer fits). */
  async holdAgainIfReleased(upload: ResumableUploadRecord): Promise<ResumableUploadRecord> {
    if (!this.#released.has(upload.id)) return upload;
    const { ledger, records, sponsoredDailyCapBytes } = this.#options;
    const reserved = await ledger.reserve(
      upload.usageSubject,
      upload.length,
      sponsoredDailyCapBytes,
      { lasting: true },
    );
    if (!reserved.ok) {
      throw new ResumableError(
        "over_cap",
        "This upload sent nothing for 10 minutes, so its share of today's cap went to other " +
          "uploads of this address; its bytes no longer fit today's cap",
      );
    }
    const moved = {
      reservationId: reserved.reservation.id,
      reservationDay: reserved.reservation.day,
    };
    if (!await records.moveReservation(upload.id, moved)) {
      await reserved.reservation.release();
      return upload;
    }
    this.#released.delete(upload.id);
    return { ...upload, ...moved };
  }
}
