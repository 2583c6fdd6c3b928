/**
 * A sponsored resumable upload that sends nothing for IDLE_RESERVATION_MS
 * lets its cap reservation go until its next byte: before, two header-only
 * creations of 100 MiB held a shared address's daily cap for a day, and a
 * neighbour behind the same NAT got 429 until midnight. The next byte takes
 * the reservation again if the upload's length still fits today's cap (429
 * rate_limited otherwise; the upload keeps what it has).
 *
 * Kept in the upload's record, so any instance's sweep lets an idle upload's
 * reservation go, after a restart too, and a request on another instance
 * keeps it: `lastActivityMs` is written when a request starts (only if the
 * record's is a minute old or more), at most once a minute while bytes
 * arrive, and with the bytes when the request records them; never per chunk.
 * `reservationReleased` says the sweep let it go. The sweep marks an upload
 * released only if its activity is still old in the same statement, and a
 * request's start reads the mark in the statement that writes its activity,
 * so of a sweep and a request that meet, one sees the other.
 */
import type { CapLedger, Reservation } from "../domain/cap_ledger.ts";
import type {
  IdleUploadKey,
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../domain/resumable_upload_records.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import { ResumableError } from "./resumable_outcomes.ts";
import type { UploadLocks } from "./upload_locks.ts";

/** A sponsored upload that sends nothing this long lets its reservation go until its next byte. */
export const IDLE_RESERVATION_MS = 10 * 60_000;
/** The record's last activity is written at most this often while bytes arrive. */
export const ACTIVITY_WRITE_MS = 60_000;
/** Idle uploads read per page by a sweep. */
const PAGE = 100;

export interface IdleReservationsOptions {
  records: ResumableUploadRecords;
  ledger: CapLedger;
  clock: Clock;
  logger: Logger;
  /** This instance's request locks: an upload with a request under way here is not idle. */
  locks: UploadLocks;
  /** The cap a released reservation is taken again under. */
  sponsoredDailyCapBytes: number;
  /** The upload's reservation, held (again) in the ledger. */
  reservationOf(upload: ResumableUploadRecord): Reservation;
}

export class IdleReservations {
  readonly #options: IdleReservationsOptions;

  constructor(options: IdleReservationsOptions) {
    this.#options = options;
  }

  /**
   * Holds the reservations of the uploads still waiting for bytes again (but those
   * let go for idling): a data directory's ledger lost them with the last process (a
   * shared database's ledger kept them; holding them again changes nothing there).
   */
  async holdAllAgain(): Promise<number> {
    let held = 0;
    for (let after = "";;) {
      const page = await this.#options.records.unfinishedAfter(after, 500);
      for (const upload of page) {
        if (upload.reservationReleased) continue;
        this.#options.reservationOf(upload);
        held++;
      }
      if (page.length < 500) return held;
      after = page[page.length - 1].id;
    }
  }

  /**
   * A request with bytes starts on the upload (under its lock): its activity is written
   * if the record's is a minute old or more, reading in the same statement whether a
   * sweep let its reservation go; if one did, the reservation is taken again (429 if
   * it no longer fits). The upload as it stands.
   */
  async requestStarts(upload: ResumableUploadRecord): Promise<ResumableUploadRecord> {
    const now = this.#options.clock.now();
    if (now - upload.lastActivityMs < ACTIVITY_WRITE_MS && !upload.reservationReleased) {
      return upload; // no sweep lets it go for nine minutes more
    }
    const touched = await this.#options.records.touch(upload.id, now);
    if (touched === null) return upload; // finished meanwhile: the caller's record says how
    const reservationReleased = touched.reservationReleased;
    return await this.#holdAgainIfReleased({ ...upload, lastActivityMs: now, reservationReleased });
  }

  /**
   * The chunk callback of a request's bytes: `onChunk` (the upload's checks), and the
   * upload's activity written at most once a minute while they arrive.
   */
  whileReceiving(
    id: string,
    onChunk: ((chunk: Uint8Array) => Promise<void> | undefined) | undefined,
  ): (chunk: Uint8Array) => Promise<void> | undefined {
    const { clock, records, logger } = this.#options;
    let written = clock.now();
    return (chunk) => {
      const now = clock.now();
      if (now - written >= ACTIVITY_WRITE_MS) {
        written = now;
        records.touch(id, now).catch((error) =>
          logger.warn("cannot record a resumable upload's activity", {
            upload: id,
            error: String(error),
          })
        );
      }
      return onChunk?.(chunk);
    };
  }

  /** Lets go of the reservations of sponsored uploads idle for IDLE_RESERVATION_MS; how many. */
  async releaseIdle(): Promise<number> {
    const { clock, locks, records, reservationOf } = this.#options;
    const cutoff = clock.now() - IDLE_RESERVATION_MS;
    let released = 0;
    let after: IdleUploadKey | null = null;
    for (;;) {
      const page = await records.idleBefore(cutoff, after, PAGE);
      for (const upload of page) {
        const lock = await locks.tryAcquire(upload.id);
        if (lock === null) continue; // a request is under way here (left alone): not idle
        try {
          // Another instance's request may have written its activity since the page was read.
          if (!await records.markReleasedIfIdle(upload.id, cutoff)) continue;
          await reservationOf(upload).release();
          released++;
        } finally {
          lock.release();
        }
      }
      if (page.length < PAGE) return released;
      after = page[page.length - 1];
    }
  }

  /** The upload with its reservation taken again if idling let it go (429 if it no longer fits). */
  async #holdAgainIfReleased(upload: ResumableUploadRecord): Promise<ResumableUploadRecord> {
    if (!upload.reservationReleased) return upload;
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
    return { ...upload, ...moved, reservationReleased: false };
  }
}
