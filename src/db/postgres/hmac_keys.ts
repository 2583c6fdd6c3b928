/**
 * The token signing key kept in PostgreSQL, one row every instance reads
 * (auth/hmac_key.ts polls it and re-reads it when a signature fails). The
 * first instance to start creates it; `rotate-key --database` replaces it;
 * `migrate` brings a data directory's key when there is none yet.
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

  /** The key's hex text, or null while no instance has made one (nothing is created). */
  async current(): Promise<string | null> {
    const [row] = await this.#sql`SELECT key_hex FROM hmac_key WHERE id = 1`;
    return (row?.key_hex as string | undefined) ?? null;
  }

  /**
   * Takes `keyHex` as the key if the database has none yet (a migration
   * bringing a data directory's key, so its tokens keep verifying); a key
   * already there is never replaced, since instances may be signing with it.
   * Answers whether it did, and the key now in force.
   */
  async adopt(keyHex: string): Promise<{ adopted: boolean; keyHex: string }> {
    const inserted = await this.#sql`INSERT INTO hmac_key (id, key_hex) VALUES (1, ${keyHex.trim()})
      ON CONFLICT (id) DO NOTHING RETURNING key_hex`;
    if (inserted.length > 0) return { adopted: true, keyHex: inserted[0].key_hex as string };
    return { adopted: false, keyHex: (await this.current())! };
  }

  /** Replaces the key: every token signed with the old one stops working. */
  async rotate(keyHex: string): Promise<void> {
    await this.#sql`INSERT INTO hmac_key (id, key_hex) VALUES (1, ${keyHex})
      ON CONFLICT (id) DO UPDATE SET key_hex = excluded.key_hex, rotated_at = now()`;
  }
}
