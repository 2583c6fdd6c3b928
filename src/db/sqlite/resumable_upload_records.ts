// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/** Resumable (tus) uploads in a data directory's database (migration 11 says what a row is). */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type {
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../../domain/resumable_upload_records.ts";

/** The columns as the record's fields, for every SELECT. */
export const RESUMABLE_COLUMNS = `id, cid, length, received, content_type AS contentType, filename,
  metadata, tier, usage_subject AS usageSubject, owner_sub AS ownerSub, owner AS ownerName,
  term_days AS termDays, reservation_id AS reservationId, reservation_day AS reservationDay,
  staging, created_at AS createdAt, expires_ms AS expiresMs, deal_id AS dealId, roots`;

export class SqliteResumableUploadRecords implements ResumableUploadRecords {
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #advance: StatementSync;
  readonly #delete: StatementSync;
  readonly #expired: StatementSync;
  readonly #unfinished: StatementSync;
  readonly #countOpen: StatementSync;
  readonly #moveReservation: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(
      `INSERT INTO resumable_uploads (id, cid, length, received, content_type, filename,
         metadata, tier, usage_subject, owner_sub, owner, term_days, reservation_id,
         reservation_day, staging, created_at, expires_ms, deal_id, roots)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#get = db.prepare(`SELECT ${RESUMABLE_COLUMNS} FROM resumable_uploads WHERE id = ?`);
    this.#advance = db.prepare(
      `UPDATE resumable_uploads SET received = ?, staging = ?, expires_ms = ?
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
      `UPDATE resumable_uploads SET reservation_id = ?, reservation_day = ?
       WHERE id = ? AND deal_id IS NULL`,
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
    );
  }

  async get(id: string): Promise<ResumableUploadRecord | null> {
    const row = this.#get.get(id) as ResumableUploadRow | undefined;
    return row ? recordOf(row) : null;
  }

  async advance(
    id: string,
    update: { fromBytes: number; received: number; staging: string; expiresMs: number },
  ): Promise<boolean> {
    const result = this.#advance.run(
      update.received,
      update.staging,
      update.expiresMs,
      id,
      update.fromBytes,
    );
    return Number(result.changes) === 1;
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

/** A row as SELECTed: the record, with its roots as the JSON text they are stored as. */
type ResumableUploadRow = Omit<ResumableUploadRecord, "roots"> & { roots: string | null };

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
  };
}
