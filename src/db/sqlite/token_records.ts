// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/** Token metadata rows: insert at signup, revocation state on every request. */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { TokenRecord, TokenRecords } from "../../domain/auth_records.ts";

interface TokenRow extends Omit<TokenRecord, "scopes"> {
  scopes: string;
}

const COLUMNS = `jti, sub, email, wallet, label, scopes, quota_mb AS quotaMb,
  issued_at AS issuedAt, expires_at AS expiresAt, revoked_at AS revokedAt`;

export class SqliteTokenRecords implements TokenRecords {
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #revocation: StatementSync;
  readonly #revoke: StatementSync;
  readonly #listBySub: StatementSync;
  readonly #listAll: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(
      `INSERT INTO tokens (jti, sub, email, wallet, label, scopes, quota_mb, issued_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#get = db.prepare(
      `SELECT ${COLUMNS} FROM tokens WHERE jti = ?`,
    );
    this.#revocation = db.prepare(`SELECT revoked_at AS revokedAt FROM tokens WHERE jti = ?`);
    this.#listBySub = db.prepare(
      `SELECT ${COLUMNS} FROM tokens WHERE sub = ? ORDER BY issued_at DESC, jti`,
    );
    this.#listAll = db.prepare(
      `SELECT ${COLUMNS} FROM tokens ORDER BY issued_at DESC, jti`,
    );
    this.#revoke = db.prepare(
      `UPDATE tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL`,
    );
  }

  async insert(token: Omit<TokenRecord, "revokedAt">): Promise<void> {
    this.#insert.run(
      token.jti,
      token.sub,
      token.email,
      token.wallet,
      token.label,
      JSON.stringify(token.scopes),
      token.quotaMb,
      token.issuedAt,
      token.expiresAt,
    );
  }

  async get(jti: string): Promise<TokenRecord | null> {
    const row = this.#get.get(jti) as TokenRow | undefined;
    return row ? { ...row, scopes: JSON.parse(row.scopes) } : null;
  }

  /** Tokens newest first: a user's (sub), or every token (for the operator's `token list`). */
  async list(options: { sub?: string } = {}): Promise<TokenRecord[]> {
    const rows = options.sub === undefined ? this.#listAll.all() : this.#listBySub.all(options.sub);
    return (rows as unknown as TokenRow[]).map((row) => ({
      ...row,
      scopes: JSON.parse(row.scopes),
    }));
  }

  /** "unknown" when this service never issued the jti; otherwise its revocation time or null. */
  async revocationOf(jti: string): Promise<"unknown" | string | null> {
    const row = this.#revocation.get(jti) as { revokedAt: string | null } | undefined;
    return row === undefined ? "unknown" : row.revokedAt;
  }

  /** Marks a token revoked; a token revoked before keeps its first revocation time. */
  async revoke(jti: string, at: string): Promise<void> {
    this.#revoke.run(at, jti);
  }
}
