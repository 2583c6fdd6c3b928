// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/** Resumable (tus) uploads in a data directory's database (migration 11 says what a row is). */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type {
  AppendRecord,
  IdleUploadKey,
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../../domain/resumable_upload_records.ts";

/** The columns as the record's fields, for every SELECT. */
export const RESUMABLE_COLUMNS = `id, cid, length, received, content_type AS contentType, filename,
  metadata, tier, usage_subject AS usageSubject, owner_sub AS ownerSub, owner AS ownerName,
  term_days AS termDays, reservation_id AS reservationId, reservation_day AS reservationDay,
  staging, created_at AS createdAt, expires_ms AS expiresMs, deal_id AS dealId, roots,
  last_activity_ms AS lastActivityMs, reservation_released AS reservationReleased`;

export class SqliteResumableUploadRecords implements ResumableUploadRecords {
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #advance: StatementSync;
  readonly #delete: StatementSync;
  readonly #expired: StatementSync;
  readonly #unfinished: StatementSync;
  readonly #countOpen: StatementSync;
  readonly #moveReservation: StatementSync;
  readonly #touch: StatementSync;
  readonly #idle: StatementSync;
  readonly #idleAfter: StatementSync;
  readonly #markReleased: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(
      `INSERT INTO resumable_uploads (id, cid, length, received, content_type, filename,
         metadata, tier, usage_subject, owner_sub, owner, term_days, reservation_id,
         reservation_day, staging, created_at, expires_ms, deal_id, roots, last_activity_ms,
         reservation_released)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#get = db.prepare(`SELECT ${RESUMABLE_COLUMNS} FROM resumable_uploads WHERE id = ?`);
    this.#advance = db.prepare(
      `UPDATE resumable_uploads SET received = ?, staging = ?, expires_ms = ?,
         last_activity_ms = MAX(last_activity_ms, ?)
       WHERE id = ? AND received = ? AND deal_id IS NULL`,
    );
    this.#delete = db.prepare(`DELETE FROM resumable_uploads WHERE id = ?`);
    this.#expired = db.prepare(
      `SELECT ${RESUMABLE_COLUMNS} FROM resumable_uploads WHERE expires_ms < ?
       ORDER BY expires_ms LIMIT ?`,
    );
    this.#unfinished = db.prepare(
      `SELECT ${RESUMABLE_COLUMNS} FROM resumable_uploads
       WHERE deal_id IS NULL AND id > ? ORDER BY id LIMIT ?`,
    );
    this.#moveReservation = db.prepare(
      `UPDATE resumable_uploads SET reservation_id = ?, reservation_day = ?,
         reservation_released = 0
       WHERE id = ? AND deal_id IS NULL`,
    );
    this.#touch = db.prepare(
      `UPDATE resumable_uploads SET last_activity_ms = MAX(last_activity_ms, ?)
       WHERE id = ? AND deal_id IS NULL RETURNING reservation_released AS released`,
    );
    // The partial index of migration 18 (resumable_uploads_idle) answers both.
    const idle = `SELECT ${RESUMABLE_COLUMNS} FROM resumable_uploads
       WHERE deal_id IS NULL AND reservation_released = 0 AND tier = 'sponsored'
         AND last_activity_ms < ?`;
    this.#idle = db.prepare(`${idle} ORDER BY last_activity_ms, id LIMIT ?`);
    this.#idleAfter = db.prepare(
      `${idle} AND (last_activity_ms, id) > (?, ?) ORDER BY last_activity_ms, id LIMIT ?`,
    );
    this.#markReleased = db.prepare(
      `UPDATE resumable_uploads SET reservation_released = 1
       WHERE id = ? AND deal_id IS NULL AND reservation_released = 0 AND last_activity_ms < ?`,
    );
    this.#countOpen = db.prepare(
      `SELECT COUNT(*) AS n FROM resumable_uploads
       WHERE usage_subject = ? AND deal_id IS NULL AND expires_ms > ?`,
    );
  }

  async moveReservation(
    id: string,
    reservation: { reservationId: string; reservationDay: string },
  ): Promise<boolean> {
    const result = this.#moveReservation.run(
      reservation.reservationId,
      reservation.reservationDay,
      id,
    );
    return Number(result.changes) === 1;
  }

  async countOpen(subject: string, nowMs: number): Promise<number> {
    return Number((this.#countOpen.get(subject, nowMs) as { n: number }).n);
  }

  async insert(r: ResumableUploadRecord): Promise<void> {
    this.#insert.run(
      r.id,
      r.cid,
      r.length,
      r.received,
      r.contentType,
      r.filename,
      r.metadata,
      r.tier,
      r.usageSubject,
      r.ownerSub,
      r.ownerName,
      r.termDays,
      r.reservationId,
      r.reservationDay,
      r.staging,
      r.createdAt,
      r.expiresMs,
      r.dealId,
      rootsText(r.roots),
      r.lastActivityMs,
      r.reservationReleased ? 1 : 0,
    );
  }

  async get(id: string): Promise<ResumableUploadRecord | null> {
    const row = this.#get.get(id) as ResumableUploadRow | undefined;
    return row ? recordOf(row) : null;
  }

  async advance(
    id: string,
    update: AppendRecord,
  ): Promise<boolean> {
    const result = this.#advance.run(
      update.received,
      update.staging,
      update.expiresMs,
      update.lastActivityMs,
      id,
      update.fromBytes,
    );
    return Number(result.changes) === 1;
  }

  async touch(id: string, atMs: number): Promise<{ reservationReleased: boolean } | null> {
    const row = this.#touch.get(atMs, id) as { released: number } | undefined;
    return row === undefined ? null : { reservationReleased: row.released === 1 };
  }

  async idleBefore(
    cutoffMs: number,
    after: IdleUploadKey | null,
    limit: number,
  ): Promise<ResumableUploadRecord[]> {
    const rows = after === null
      ? this.#idle.all(cutoffMs, limit)
      : this.#idleAfter.all(cutoffMs, after.lastActivityMs, after.id, limit);
    return (rows as unknown as ResumableUploadRow[]).map(recordOf);
  }

  async markReleasedIfIdle(id: string, cutoffMs: number): Promise<boolean> {
    return Number(this.#markReleased.run(id, cutoffMs).changes) === 1;
  }

  async delete(id: string): Promise<boolean> {
    return Number(this.#delete.run(id).changes) === 1;
  }

  async expiredBefore(nowMs: number, limit: number): Promise<ResumableUploadRecord[]> {
    return (this.#expired.all(nowMs, limit) as unknown as ResumableUploadRow[]).map(recordOf);
  }

  async unfinishedAfter(afterId: string, limit: number): Promise<ResumableUploadRecord[]> {
    return (this.#unfinished.all(afterId, limit) as unknown as ResumableUploadRow[])
      .map(recordOf);
  }
}

/** A row as SELECTed: the record, its roots as the JSON text they are stored as, its flag 0 or 1. */
type ResumableUploadRow = Omit<ResumableUploadRecord, "roots" | "reservationReleased"> & {
  roots: string | null;
  reservationReleased: number;
};

/** The roots column's text: a JSON array, or NULL for an upload that is not a finished CAR. */
function rootsText(roots: string[] | null): string | null {
  return roots === null ? null : JSON.stringify(roots);
}

/** node:sqlite answers INTEGER columns as numbers already; a spread drops its null prototype. */
function recordOf(row: ResumableUploadRow): ResumableUploadRecord {
  return {
    ...row,
    roots: row.roots === null ? null : JSON.parse(row.roots) as string[],
    length: Number(row.length),
    received: Number(row.received),
    termDays: Number(row.termDays),
    expiresMs: Number(row.expiresMs),
    lastActivityMs: Number(row.lastActivityMs),
    reservationReleased: row.reservationReleased === 1,
  };
}
