/** The page's cookie sessions in PostgreSQL: as db/sqlite/session_records.ts. */
import type { Sql } from "./connection.ts";
import type { SessionRecords } from "../../domain/auth_records.ts";

export class PostgresSessionRecords implements SessionRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async insert(session: { idHash: string; jti: string; expiresMs: number }): Promise<void> {
    await this.#sql`INSERT INTO sessions (id_hash, jti, expires_ms)
      VALUES (${session.idHash}, ${session.jti}, ${session.expiresMs})`;
  }

  async jtiOf(idHash: string, nowMs: number): Promise<string | null> {
    const rows = await this.#sql`SELECT jti FROM sessions
      WHERE id_hash = ${idHash} AND expires_ms > ${nowMs}`;
    return rows.length > 0 ? String(rows[0].jti) : null;
  }

  async delete(idHash: string): Promise<boolean> {
    return (await this.#sql`DELETE FROM sessions WHERE id_hash = ${idHash}`).count === 1;
  }

  async pruneExpired(nowMs: number): Promise<number> {
    return (await this.#sql`DELETE FROM sessions WHERE expires_ms <= ${nowMs}`).count;
  }
}
