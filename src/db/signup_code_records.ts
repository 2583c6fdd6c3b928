/** Pending signup codes (`--signup verify`): one per e-mail address. */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { SignupCodeRecord } from "../domain.ts";

interface SignupCodeRow extends Omit<SignupCodeRecord, "scopes"> {
  scopes: string;
}

export class SignupCodeRecords {
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #countAttempt: StatementSync;
  readonly #delete: StatementSync;

  constructor(db: Database) {
    this.#put = db.prepare(
      `INSERT INTO signup_codes (email, code_hash, label, scopes, quota_mb, expires_at, attempts)
       VALUES (?, ?, ?, ?, ?, ?, 0)
       ON CONFLICT (email) DO UPDATE SET code_hash = excluded.code_hash,
         label = excluded.label, scopes = excluded.scopes, quota_mb = excluded.quota_mb,
         expires_at = excluded.expires_at, attempts = 0`,
    );
    this.#get = db.prepare(
      `SELECT email, code_hash AS codeHash, label, scopes, quota_mb AS quotaMb,
              expires_at AS expiresAt, attempts
       FROM signup_codes WHERE email = ?`,
    );
    this.#countAttempt = db.prepare(
      `UPDATE signup_codes SET attempts = attempts + 1 WHERE email = ?`,
    );
    this.#delete = db.prepare(`DELETE FROM signup_codes WHERE email = ?`);
  }

  /** Stores the pending code of an address, replacing any earlier one. */
  put(record: Omit<SignupCodeRecord, "attempts">): void {
    this.#put.run(
      record.email,
      record.codeHash,
      record.label,
      JSON.stringify(record.scopes),
      record.quotaMb,
      record.expiresAt,
    );
  }

  get(email: string): SignupCodeRecord | null {
    const row = this.#get.get(email) as SignupCodeRow | undefined;
    if (!row) return null;
    return {
      ...row,
      scopes: JSON.parse(row.scopes),
      quotaMb: Number(row.quotaMb),
      attempts: Number(row.attempts),
    };
  }

  countAttempt(email: string): void {
    this.#countAttempt.run(email);
  }

  delete(email: string): boolean {
    return Number(this.#delete.run(email).changes) > 0;
  }
}
