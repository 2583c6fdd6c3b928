// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/**
 * The page's cookie sessions (migration 16): the hash of a cookie's secret,
 * the token it acts as, and its end. Ending one is one DELETE.
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { SessionRecords } from "../../domain/auth_records.ts";

export class SqliteSessionRecords implements SessionRecords {
  readonly #insert: StatementSync;
  readonly #jtiOf: StatementSync;
  readonly #delete: StatementSync;
  readonly #pruneExpired: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(`INSERT INTO sessions (id_hash, jti, expires_ms) VALUES (?, ?, ?)`);
    this.#jtiOf = db.prepare(`SELECT jti FROM sessions WHERE id_hash = ? AND expires_ms > ?`);
    this.#delete = db.prepare(`DELETE FROM sessions WHERE id_hash = ?`);
    this.#pruneExpired = db.prepare(`DELETE FROM sessions WHERE expires_ms <= ?`);
  }

  async insert(session: { idHash: string; jti: string; expiresMs: number }): Promise<void> {
    this.#insert.run(session.idHash, session.jti, session.expiresMs);
  }

  async jtiOf(idHash: string, nowMs: number): Promise<string | null> {
    const row = this.#jtiOf.get(idHash, nowMs) as { jti: string } | undefined;
    return row?.jti ?? null;
  }

  async delete(idHash: string): Promise<boolean> {
    return Number(this.#delete.run(idHash).changes) === 1;
  }

  async pruneExpired(nowMs: number): Promise<number> {
    return Number(this.#pruneExpired.run(nowMs).changes);
  }
}
