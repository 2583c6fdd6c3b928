/** Pending signup codes in PostgreSQL: as db/sqlite/signup_code_records.ts. */
import type { Sql } from "./connection.ts";
import type { SignupCodeRecord, SignupCodeRecords } from "../../domain/auth_records.ts";

export class PostgresSignupCodeRecords implements SignupCodeRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async put(record: SignupCodeRecord): Promise<void> {
    await this.#sql`INSERT INTO signup_codes
        (email, client_key, code_hash, label, scopes, quota_mb, created_at, expires_at, attempts)
      VALUES (${record.email}, ${record.clientKey}, ${record.codeHash}, ${record.label},
              ${JSON.stringify(record.scopes)}, ${record.quotaMb}, ${record.createdAt},
              ${record.expiresAt}, ${record.attempts})
      ON CONFLICT (email, client_key) DO UPDATE SET code_hash = excluded.code_hash,
        label = excluded.label, scopes = excluded.scopes, quota_mb = excluded.quota_mb,
        created_at = excluded.created_at, expires_at = excluded.expires_at,
        attempts = excluded.attempts`;
  }

  async get(email: string, clientKey: string): Promise<SignupCodeRecord | null> {
    const [row] = await this.#sql`SELECT email, client_key AS "clientKey", code_hash AS "codeHash",
        label, scopes, quota_mb AS "quotaMb", created_at AS "createdAt", expires_at AS "expiresAt",
        attempts
      FROM signup_codes WHERE email = ${email} AND client_key = ${clientKey}`;
    if (!row) return null;
    return {
      ...row,
      scopes: JSON.parse(row.scopes as string),
      quotaMb: Number(row.quotaMb),
      attempts: Number(row.attempts),
    } as SignupCodeRecord;
  }

  async countAttempt(email: string, clientKey: string): Promise<void> {
    await this.#sql`UPDATE signup_codes SET attempts = attempts + 1
      WHERE email = ${email} AND client_key = ${clientKey}`;
  }

  async delete(email: string, clientKey: string): Promise<boolean> {
    const deleted = await this.#sql`DELETE FROM signup_codes
      WHERE email = ${email} AND client_key = ${clientKey}`;
    return deleted.count > 0;
  }

  async deleteCode(email: string, clientKey: string, codeHash: string): Promise<void> {
    await this.#sql`DELETE FROM signup_codes
      WHERE email = ${email} AND client_key = ${clientKey} AND code_hash = ${codeHash}`;
  }

  async purgeExpired(now: string): Promise<void> {
    await this.#sql`DELETE FROM signup_codes WHERE expires_at <= ${now}`;
  }
}
