/**
 * The RSA keys of `--token-alg RS256` kept in PostgreSQL, one row a key,
 * which every instance reads (auth/rsa_keys.ts polls them and re-reads them
 * when a token names an unknown kid), so instances sharing the database sign
 * and verify with the same keys. The first instance to start makes the first
 * key; `rotate-key --database` rotates them; `migrate` brings a data
 * directory's keys when there are none yet; `backup` writes them into its
 * copy's rsa-keys.json.
 *
 * The signing key's private half is kept as the HS256 key is (hmac_keys.ts):
 * a row in the database, readable by the database role the instances use, so
 * whoever can read the database can sign tokens under either algorithm.
 * Writers (a first start, a rotation, a migration) take the table's lock in
 * one transaction, so two of them never interleave; readers are not held up.
 */
import type { RsaKeyStore, StoredRsaKey } from "../../domain/signing_keys.ts";
import type { Row, Sql, TransactionSql } from "./connection.ts";

const COLUMNS = ["kid", "created_at", "retires_at", "public_jwk", "private_jwk"] as const;

function keyOf(row: Row): StoredRsaKey {
  const key: StoredRsaKey = {
    kid: row.kid as string,
    createdAt: row.created_at as string,
    retiresAt: row.retires_at as string | null,
    publicJwk: JSON.parse(row.public_jwk as string),
  };
  if (row.private_jwk !== null) key.privateJwk = JSON.parse(row.private_jwk as string);
  return key;
}

function rowOf(key: StoredRsaKey): Row {
  return {
    kid: key.kid,
    created_at: key.createdAt,
    retires_at: key.retiresAt,
    public_jwk: JSON.stringify(key.publicJwk),
    private_jwk: key.privateJwk === undefined ? null : JSON.stringify(key.privateJwk),
  };
}

/** The signing key first, then earlier keys, newest first. */
async function keysIn(sql: TransactionSql): Promise<StoredRsaKey[]> {
  const rows = await sql`SELECT kid, created_at, retires_at, public_jwk, private_jwk
    FROM rsa_keys ORDER BY retires_at IS NOT NULL, created_at DESC, kid`;
  return rows.map(keyOf);
}

export class PostgresRsaKeys implements RsaKeyStore {
  readonly shared = true;
  readonly where: string;
  readonly #sql: Sql;

  constructor(sql: Sql, where: string) {
    this.#sql = sql;
    this.where = `the database at ${where}`;
  }

  async read(): Promise<StoredRsaKey[] | null> {
    const keys = await keysIn(this.#sql);
    return keys.length === 0 ? null : keys;
  }

  adopt(keys: StoredRsaKey[]): Promise<{ adopted: boolean; keys: StoredRsaKey[] }> {
    return this.#write(async (tx) => {
      const current = await keysIn(tx);
      if (current.length > 0) return { adopted: false, keys: current };
      await insert(tx, keys);
      return { adopted: true, keys };
    });
  }

  update(change: (keys: StoredRsaKey[]) => StoredRsaKey[]): Promise<void> {
    return this.#write(async (tx) => {
      const next = change(await keysIn(tx));
      await tx`DELETE FROM rsa_keys`;
      await insert(tx, next);
    });
  }

  /** One writer at a time; plain reads go on beside it. */
  #write<T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> {
    return this.#sql.begin(async (tx) => {
      await tx`LOCK TABLE rsa_keys IN EXCLUSIVE MODE`;
      return await fn(tx);
    });
  }
}

async function insert(tx: TransactionSql, keys: readonly StoredRsaKey[]): Promise<void> {
  if (keys.length === 0) return;
  await tx`INSERT INTO rsa_keys ${tx.values(keys.map(rowOf), COLUMNS)}`;
}
