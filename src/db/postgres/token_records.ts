/** Token metadata in PostgreSQL: as db/sqlite/token_records.ts, read by every instance. */
import type { Sql } from "./connection.ts";
import type { TokenRecord, TokenRecords } from "../../domain/auth_records.ts";

const COLUMNS = `jti, sub, email, wallet, label, scopes, quota_mb AS "quotaMb",
  issued_at AS "issuedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

function recordOf(row: Record<string, unknown>): TokenRecord {
  return { ...row, scopes: JSON.parse(row.scopes as string) } as TokenRecord;
}

export class PostgresTokenRecords implements TokenRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async insert(token: Omit<TokenRecord, "revokedAt">): Promise<void> {
    await this.#sql`INSERT INTO tokens
      (jti, sub, email, wallet, label, scopes, quota_mb, issued_at, expires_at)
      VALUES (${token.jti}, ${token.sub}, ${token.email}, ${token.wallet}, ${token.label},
              ${JSON.stringify(token.scopes)}, ${token.quotaMb}, ${token.issuedAt},
              ${token.expiresAt})`;
  }

  async get(jti: string): Promise<TokenRecord | null> {
    const [row] = await this.#sql.unsafe(`SELECT ${COLUMNS} FROM tokens WHERE jti = $1`, [jti]);
    return row ? recordOf(row) : null;
  }

  async list(options: { sub?: string } = {}): Promise<TokenRecord[]> {
    const rows = options.sub === undefined
      ? await this.#sql.unsafe(`SELECT ${COLUMNS} FROM tokens ORDER BY issued_at DESC, jti`)
      : await this.#sql.unsafe(
        `SELECT ${COLUMNS} FROM tokens WHERE sub = $1 ORDER BY issued_at DESC, jti`,
        [options.sub],
      );
    return rows.map(recordOf);
  }

  async revocationOf(jti: string): Promise<"unknown" | string | null> {
    const [row] = await this.#sql`SELECT revoked_at FROM tokens WHERE jti = ${jti}`;
    return row === undefined ? "unknown" : row.revoked_at as string | null;
  }

  async revoke(jti: string, at: string): Promise<void> {
    await this.#sql`UPDATE tokens SET revoked_at = ${at}
      WHERE jti = ${jti} AND revoked_at IS NULL`;
  }
}
