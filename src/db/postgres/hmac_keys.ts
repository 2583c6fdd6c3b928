/**
 * The token signing key kept in PostgreSQL, one row every instance reads
 * (auth/hmac_key.ts polls it and re-reads it when a signature fails). The
 * first instance to start creates it; `rotate-key --database` replaces it.
 */
import type { Sql } from "./connection.ts";

export class PostgresHmacKeys {
  readonly label = "the database";
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** The key's hex text; created from `create()` if no instance has made one yet. */
  async read(create: () => string): Promise<string> {
    const [row] = await this.#sql`SELECT key_hex FROM hmac_key WHERE id = 1`;
    if (row) return row.key_hex as string;
    // Of instances starting at once, the first insert wins and every one reads it back.
    await this.#sql`INSERT INTO hmac_key (id, key_hex) VALUES (1, ${create()})
      ON CONFLICT (id) DO NOTHING`;
    const [created] = await this.#sql`SELECT key_hex FROM hmac_key WHERE id = 1`;
    return created.key_hex as string;
  }

  /** Replaces the key: every token signed with the old one stops working. */
  async rotate(keyHex: string): Promise<void> {
    await this.#sql`INSERT INTO hmac_key (id, key_hex) VALUES (1, ${keyHex})
      ON CONFLICT (id) DO UPDATE SET key_hex = excluded.key_hex, rotated_at = now()`;
  }
}
