// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/** Pending signup codes (`--signup verify`): one per e-mail address and client. */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { SignupCodeRecord, SignupCodeRecords } from "../../domain/auth_records.ts";

interface SignupCodeRow extends Omit<SignupCodeRecord, "scopes"> {
  scopes: string;
}

export class SqliteSignupCodeRecords implements SignupCodeRecords {
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #countAttempt: StatementSync;
  readonly #delete: StatementSync;
  readonly #deleteCode: StatementSync;
  readonly #purgeExpired: StatementSync;

  constructor(db: Database) {
    this.#put = db.prepare(
      `INSERT INTO signup_codes
         (email, client_key, code_hash, label, scopes, quota_mb, created_at, expires_at, attempts)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (email, client_key) DO UPDATE SET code_hash = excluded.code_hash,
         label = excluded.label, scopes = excluded.scopes, quota_mb = excluded.quota_mb,
         created_at = excluded.created_at, expires_at = excluded.expires_at,
         attempts = excluded.attempts`,
    );
    this.#get = db.prepare(
      `SELECT email, client_key AS clientKey, code_hash AS codeHash, label, scopes,
              quota_mb AS quotaMb, created_at AS createdAt, expires_at AS expiresAt, attempts
       FROM signup_codes WHERE email = ? AND client_key = ?`,
    );
    this.#countAttempt = db.prepare(
      `UPDATE signup_codes SET attempts = attempts + 1 WHERE email = ? AND client_key = ?`,
    );
    this.#delete = db.prepare(`DELETE FROM signup_codes WHERE email = ? AND client_key = ?`);
    this.#deleteCode = db.prepare(
      `DELETE FROM signup_codes WHERE email = ? AND client_key = ? AND code_hash = ?`,
    );
    this.#purgeExpired = db.prepare(`DELETE FROM signup_codes WHERE expires_at <= ?`);
  }

  async put(record: SignupCodeRecord): Promise<void> {
    this.#put.run(
      record.email,
      record.clientKey,
      record.codeHash,
      record.label,
      JSON.stringify(record.scopes),
      record.quotaMb,
      record.createdAt,
      record.expiresAt,
      record.attempts,
    );
  }

  async get(email: string, clientKey: string): Promise<SignupCodeRecord | null> {
    const row = this.#get.get(email, clientKey) as SignupCodeRow | undefined;
    if (!row) return null;
    return {
      ...row,
      scopes: JSON.parse(row.scopes),
      quotaMb: Number(row.quotaMb),
      attempts: Number(row.attempts),
    };
  }

  async countAttempt(email: string, clientKey: string): Promise<void> {
    this.#countAttempt.run(email, clientKey);
  }

  async delete(email: string, clientKey: string): Promise<boolean> {
    return Number(this.#delete.run(email, clientKey).changes) > 0;
  }

  async deleteCode(email: string, clientKey: string, codeHash: string): Promise<void> {
    this.#deleteCode.run(email, clientKey, codeHash);
  }

  async purgeExpired(now: string): Promise<void> {
    this.#purgeExpired.run(now);
  }
}
