/**
 * The tables both dialects' migrations create alike, written once. SQLite
 * (db/sqlite/migrations/) and PostgreSQL (db/postgres/migrations.ts) keep the
 * same records, so several tables have the same columns in both and differ
 * only in how each dialect spells a type: a 64-bit integer, a key compared
 * bytewise, a table that refuses values of the wrong type.
 *
 * A shipped migration never changes (existing databases were migrated with
 * its text), and these tables are parts of shipped migrations: the text they
 * produce is pinned, migration by migration, by tests/db/migration_text_test.ts.
 * A new shape of a table is a new migration, not an edit here.
 */

/** How a dialect spells what the shared tables need. */
export interface DdlDialect {
  /** A 64-bit integer column. */
  bigint: "BIGINT" | "INTEGER";
  /** After TEXT: a key that pages are cut by compares bytewise (SQLite's do by default). */
  bytewise: ' COLLATE "C"' | "";
  /** After a table's closing parenthesis: SQLite's STRICT typing. */
  tableOptions: " STRICT" | "";
}

export const SQLITE_DDL: DdlDialect = { bigint: "INTEGER", bytewise: "", tableOptions: " STRICT" };
export const POSTGRES_DDL: DdlDialect = {
  bigint: "BIGINT",
  bytewise: ' COLLATE "C"',
  tableOptions: "",
};

/** A pending signup code's fields, but for its key (the address, then the address and client). */
const SIGNUP_CODE_FIELDS = `  code_hash  TEXT NOT NULL,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0`;

/**
 * signup_codes: one pending code per address (SQLite migration 4, PostgreSQL
 * version 1), then one per address and client (SQLite 8, PostgreSQL 2).
 */
export function signupCodesTable(dialect: DdlDialect, options: { perClient: boolean }): string {
  if (!options.perClient) {
    return `CREATE TABLE signup_codes (
  email      TEXT PRIMARY KEY,
${SIGNUP_CODE_FIELDS}
)${dialect.tableOptions};`;
  }
  return `CREATE TABLE signup_codes (
  email      TEXT NOT NULL,
  client_key TEXT NOT NULL,
${SIGNUP_CODE_FIELDS},
  PRIMARY KEY (email, client_key)
)${dialect.tableOptions};`;
}

/**
 * tokens as the wallet tier made it (SQLite migration 5 builds it as
 * `tokens_rebuilt` and renames it; PostgreSQL version 1 creates it).
 */
export function tokensTable(dialect: DdlDialect, options: { name: string }): string {
  const { bytewise } = dialect;
  return `CREATE TABLE ${options.name} (
  jti        TEXT${bytewise} PRIMARY KEY,
  sub        TEXT NOT NULL,
  email      TEXT,
  wallet     TEXT,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER,
  issued_at  TEXT${bytewise} NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT,
  CHECK ((email IS NULL) <> (wallet IS NULL)),
  CHECK ((quota_mb IS NULL) = (email IS NULL))
)${dialect.tableOptions};`;
}

/** gc_sweeps: the last sweep, for /healthz (SQLite migration 10, PostgreSQL version 4). */
export function gcSweepsTable(dialect: DdlDialect): string {
  const { bigint } = dialect;
  return `CREATE TABLE gc_sweeps (
  id              INTEGER PRIMARY KEY CHECK (id = 1),
  started_at      TEXT NOT NULL,
  finished_at     TEXT NOT NULL,
  removed_pieces  ${bigint} NOT NULL,
  removed_bytes   ${bigint} NOT NULL,
  removed_orphans ${bigint} NOT NULL
)${dialect.tableOptions};`;
}

/** resumable_uploads and its expiry index (SQLite migration 11, PostgreSQL version 5). */
export function resumableUploadsTable(dialect: DdlDialect): string {
  const { bigint } = dialect;
  return `CREATE TABLE resumable_uploads (
  id              TEXT${dialect.bytewise} PRIMARY KEY,
  cid             TEXT NOT NULL,
  length          ${bigint} NOT NULL CHECK (length > 0),
  received        ${bigint} NOT NULL DEFAULT 0 CHECK (received >= 0 AND received <= length),
  content_type    TEXT NOT NULL,
  filename        TEXT,
  metadata        TEXT NOT NULL,
  tier            TEXT NOT NULL CHECK (tier IN ('sponsored', 'token', 'wallet')),
  usage_subject   TEXT NOT NULL,
  owner_sub       TEXT,
  owner           TEXT,
  term_days       INTEGER NOT NULL,
  reservation_id  TEXT NOT NULL,
  reservation_day TEXT NOT NULL,
  staging         TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  expires_ms      ${bigint} NOT NULL,
  deal_id         TEXT,
  roots           TEXT
)${dialect.tableOptions};
CREATE INDEX resumable_uploads_by_expiry ON resumable_uploads (expires_ms);`;
}
