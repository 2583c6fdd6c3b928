/**
 * The records of resumable (tus) uploads, as a port: the upload pipeline
 * (uploads/resumable.ts) keeps an upload's terms and progress through it, so
 * any instance may take the next PATCH, and each metadata backend implements
 * it (db/sqlite/, db/postgres/). The upload's last byte is recorded with its
 * deal by CatalogRecords.recordUpload (domain/catalog_records.ts).
 */
import type { Tier } from "./vocabulary.ts";

/**
 * A resumable (tus) upload: its terms, fixed when it was created, and how far
 * it got. The bytes themselves are the store's (driver/driver.ts: PartialStore).
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
  /** When it is removed: 24 h after its creation (a finished one: after it finished). */
  expiresMs: number;
  /** The deal its last byte made; null until then. */
  dealId: string | null;
  /** A finished CAR upload's roots, for its result; null otherwise. */
  roots: string[] | null;
  /**
   * When it last got bytes (or was created), in ms: written when a request's
   * bytes are recorded and, during a long request, at most once a minute, so
   * any instance's sweep can tell an idle upload (uploads/idle_reservations.ts).
   */
  lastActivityMs: number;
  /** Its cap reservation was let go for idling; its next byte takes it again. */
  reservationReleased: boolean;
}

/** What an append records: the bytes, only while `received` is still `fromBytes`, and when. */
export interface AppendRecord {
  fromBytes: number;
  received: number;
  staging: string;
  expiresMs: number;
  /** Now: the append is the upload's latest activity (never moved back). */
  lastActivityMs: number;
}

/** The fields an idle sponsored upload is paged by (idleBefore). */
export interface IdleUploadKey {
  lastActivityMs: number;
  id: string;
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
    update: AppendRecord,
  ): Promise<boolean>;
  /**
   * Records activity at `atMs` on an unfinished upload (never moving it back):
   * whether its reservation had been let go, read in the same statement, so a
   * sweep that lets it go either sees this activity or is seen by it. Null when
   * the upload is gone or finished.
   */
  touch(id: string, atMs: number): Promise<{ reservationReleased: boolean } | null>;
  /**
   * Up to `limit` unfinished sponsored uploads still holding their reservation
   * with no activity since before `cutoffMs`, after `after` in (lastActivityMs, id) order.
   */
  idleBefore(
    cutoffMs: number,
    after: IdleUploadKey | null,
    limit: number,
  ): Promise<ResumableUploadRecord[]>;
  /**
   * Marks the upload's reservation let go, only if it still holds it and has
   * had no activity since before `cutoffMs` (another instance may have just
   * touched it); true when marked, and the caller releases it.
   */
  markReleasedIfIdle(id: string, cutoffMs: number): Promise<boolean>;
  /**
   * Names the upload's new cap reservation (its old one was released) and
   * clears reservationReleased; false when it finished.
   */
  moveReservation(
    id: string,
    reservation: { reservationId: string; reservationDay: string },
  ): Promise<boolean>;
  /** Removes an upload; false when it was gone already. */
  delete(id: string): Promise<boolean>;
  /** Up to `limit` uploads whose expiresMs is before nowMs, oldest first. */
  expiredBefore(nowMs: number, limit: number): Promise<ResumableUploadRecord[]>;
  /** How many uploads of `subject` wait for bytes and have not expired at `nowMs`. */
  countOpen(subject: string, nowMs: number): Promise<number>;
  /** Uploads still waiting for bytes, up to `limit` with ids after `afterId` (id order). */
  unfinishedAfter(afterId: string, limit: number): Promise<ResumableUploadRecord[]>;
}
