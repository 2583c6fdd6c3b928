/**
 * Wallet sign-in nonces in PostgreSQL: as db/sqlite/wallet_nonce_records.ts.
 * Consuming is one DELETE, so of two instances racing with the same signed
 * message only one sees a row go.
 */
import type { Sql } from "./connection.ts";
import type { WalletNonceRecords } from "../../domain/auth_records.ts";

export class PostgresWalletNonceRecords implements WalletNonceRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async insert(nonce: string, expiresMs: number): Promise<void> {
    await this.#sql`INSERT INTO wallet_nonces (nonce, expires_ms) VALUES (${nonce}, ${expiresMs})`;
  }

  async isLive(nonce: string, nowMs: number): Promise<boolean> {
    const rows = await this.#sql`SELECT 1 FROM wallet_nonces
      WHERE nonce = ${nonce} AND expires_ms > ${nowMs}`;
    return rows.length > 0;
  }

  async consume(nonce: string, nowMs: number): Promise<boolean> {
    const result = await this.#sql`DELETE FROM wallet_nonces
      WHERE nonce = ${nonce} AND expires_ms > ${nowMs}`;
    return result.count === 1;
  }

  async pruneExpired(nowMs: number): Promise<number> {
    return (await this.#sql`DELETE FROM wallet_nonces WHERE expires_ms <= ${nowMs}`).count;
  }
}
