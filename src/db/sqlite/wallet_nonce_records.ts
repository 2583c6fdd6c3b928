// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/**
 * Sign-in nonces of the wallet tier. A nonce is handed out once, lives ten
 * minutes and is spent by the sign-in that uses it: consuming is one DELETE,
 * so two sign-ins racing with the same signed message cannot both succeed,
 * and a restart cannot make a spent nonce usable again.
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { WalletNonceRecords } from "../../domain/auth_records.ts";

export class SqliteWalletNonceRecords implements WalletNonceRecords {
  readonly #insert: StatementSync;
  readonly #isLive: StatementSync;
  readonly #consume: StatementSync;
  readonly #pruneExpired: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(`INSERT INTO wallet_nonces (nonce, expires_ms) VALUES (?, ?)`);
    this.#isLive = db.prepare(`SELECT 1 FROM wallet_nonces WHERE nonce = ? AND expires_ms > ?`);
    this.#consume = db.prepare(`DELETE FROM wallet_nonces WHERE nonce = ? AND expires_ms > ?`);
    this.#pruneExpired = db.prepare(`DELETE FROM wallet_nonces WHERE expires_ms <= ?`);
  }

  async insert(nonce: string, expiresMs: number): Promise<void> {
    this.#insert.run(nonce, expiresMs);
  }

  /** True while the nonce was issued, is unspent and has not expired. */
  async isLive(nonce: string, nowMs: number): Promise<boolean> {
    return this.#isLive.get(nonce, nowMs) !== undefined;
  }

  /** Spends a live nonce; false when it was unknown, spent or expired. */
  async consume(nonce: string, nowMs: number): Promise<boolean> {
    return Number(this.#consume.run(nonce, nowMs).changes) === 1;
  }

  /** Forgets nonces that expired unspent; returns how many. */
  async pruneExpired(nowMs: number): Promise<number> {
    return Number(this.#pruneExpired.run(nowMs).changes);
  }
}
