/**
 * Resumable (tus) uploads in PostgreSQL: the same records as
 * db/sqlite/resumable_upload_records.ts, shared by every instance, so any
 * instance continues an upload another one started. `advance` records an
 * append only while the offset is the one it started from, so of two
 * instances appending at once one wins and the other answers 409.
 */
import type { Sql } from "./connection.ts";
import type {
  AppendRecord,
  IdleUploadKey,
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../../domain/resumable_upload_records.ts";

const COLUMNS = `id, cid, length, received, content_type AS "contentType", filename, metadata,
  tier, usage_subject AS "usageSubject", owner_sub AS "ownerSub", owner AS "ownerName",
  term_days AS "termDays", reservation_id AS "reservationId",
  reservation_day AS "reservationDay", staging, created_at AS "createdAt",
  expires_ms AS "expiresMs", deal_id AS "dealId", roots,
  last_activity_ms AS "lastActivityMs", reservation_released AS "reservationReleased"`;

/** Unfinished sponsored uploads holding their reservation (the partial index of version 13). */
const IDLE = `SELECT ${COLUMNS} FROM resumable_uploads
  WHERE deal_id IS NULL AND NOT reservation_released AND tier = 'sponsored'
    AND last_activity_ms < $1`;

export class PostgresResumableUploadRecords implements ResumableUploadRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async insert(r: ResumableUploadRecord): Promise<void> {
    await this.#sql`INSERT INTO resumable_uploads (id, cid, length, received, content_type,
        filename, metadata, tier, usage_subject, owner_sub, owner, term_days, reservation_id,
        reservation_day, staging, created_at, expires_ms, deal_id, roots, last_activity_ms,
        reservation_released)
      VALUES (${r.id}, ${r.cid}, ${r.length}, ${r.received}, ${r.contentType}, ${r.filename},
        ${r.metadata}, ${r.tier}, ${r.usageSubject}, ${r.ownerSub}, ${r.ownerName},
        ${r.termDays}, ${r.reservationId}, ${r.reservationDay}, ${r.staging}, ${r.createdAt},
        ${r.expiresMs}, ${r.dealId}, ${r.roots === null ? null : JSON.stringify(r.roots)},
        ${r.lastActivityMs}, ${r.reservationReleased})`;
  }

  async get(id: string): Promise<ResumableUploadRecord | null> {
    const [row] = await this.#sql.unsafe(
      `SELECT ${COLUMNS} FROM resumable_uploads WHERE id = $1`,
      [id],
    );
    return row ? recordOf(row) : null;
  }

  async advance(
    id: string,
    update: AppendRecord,
  ): Promise<boolean> {
    const result = await this.#sql`UPDATE resumable_uploads SET received = ${update.received},
        staging = ${update.staging}, expires_ms = ${update.expiresMs},
        last_activity_ms = GREATEST(last_activity_ms, ${update.lastActivityMs})
      WHERE id = ${id} AND received = ${update.fromBytes} AND deal_id IS NULL`;
    return result.count === 1;
  }

  async touch(id: string, atMs: number): Promise<{ reservationReleased: boolean } | null> {
    const [row] = await this.#sql`UPDATE resumable_uploads
      SET last_activity_ms = GREATEST(last_activity_ms, ${atMs})
      WHERE id = ${id} AND deal_id IS NULL RETURNING reservation_released AS released`;
    return row ? { reservationReleased: row.released === true } : null;
  }

  async idleBefore(
    cutoffMs: number,
    after: IdleUploadKey | null,
    limit: number,
  ): Promise<ResumableUploadRecord[]> {
    const rows = after === null
      ? await this.#sql.unsafe(`${IDLE} ORDER BY last_activity_ms, id LIMIT $2`, [cutoffMs, limit])
      : await this.#sql.unsafe(
        `${IDLE} AND (last_activity_ms, id) > ($2, $3) ORDER BY last_activity_ms, id LIMIT $4`,
        [cutoffMs, after.lastActivityMs, after.id, limit],
      );
    return rows.map(recordOf);
  }

  async markReleasedIfIdle(id: string, cutoffMs: number): Promise<boolean> {
    const result = await this.#sql`UPDATE resumable_uploads SET reservation_released = TRUE
      WHERE id = ${id} AND deal_id IS NULL AND NOT reservation_released
        AND last_activity_ms < ${cutoffMs}`;
    return result.count === 1;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.#sql`DELETE FROM resumable_uploads WHERE id = ${id}`;
    return result.count === 1;
  }

  async expiredBefore(nowMs: number, limit: number): Promise<ResumableUploadRecord[]> {
    const rows = await this.#sql.unsafe(
      `SELECT ${COLUMNS} FROM resumable_uploads WHERE expires_ms < $1
       ORDER BY expires_ms LIMIT $2`,
      [nowMs, limit],
    );
    return rows.map(recordOf);
  }

  async moveReservation(
    id: string,
    reservation: { reservationId: string; reservationDay: string },
  ): Promise<boolean> {
    const result = await this.#sql`UPDATE resumable_uploads
      SET reservation_id = ${reservation.reservationId},
        reservation_day = ${reservation.reservationDay}, reservation_released = FALSE
      WHERE id = ${id} AND deal_id IS NULL`;
    return result.count === 1;
  }

  async countOpen(subject: string, nowMs: number): Promise<number> {
    const [row] = await this.#sql`SELECT COUNT(*)::int8 AS n FROM resumable_uploads
      WHERE usage_subject = ${subject} AND deal_id IS NULL AND expires_ms > ${nowMs}`;
    return Number(row.n);
  }

  async unfinishedAfter(afterId: string, limit: number): Promise<ResumableUploadRecord[]> {
    const rows = await this.#sql.unsafe(
      `SELECT ${COLUMNS} FROM resumable_uploads WHERE deal_id IS NULL AND id > $1
       ORDER BY id LIMIT $2`,
      [afterId, limit],
    );
    return rows.map(recordOf);
  }
}

/** A row as the record: its roots column is JSON text (NULL unless a finished CAR). */
function recordOf(row: Record<string, unknown>): ResumableUploadRecord {
  const roots = row.roots as string | null;
  return {
    ...row,
    roots: roots === null ? null : JSON.parse(roots),
    lastActivityMs: Number(row.lastActivityMs),
  } as ResumableUploadRecord;
}
