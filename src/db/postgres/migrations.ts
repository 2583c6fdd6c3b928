/**
 * The PostgreSQL schema, as numbered migrations like SQLite's (db/sqlite/
 * migrations/). Version 1 is the SQLite schema as of its migration 6, plus
 * what sharing one database across instances needs: reserved bytes beside
 * the usage counters, reservation rows owned by an instance, instance
 * heartbeats, the shared HMAC key, and a sequence that orders corrupt marks.
 *
 * Timestamps stay RFC 3339 text, as in SQLite, so both backends hand the same
 * records to the same code; sizes are BIGINT (parsed to numbers, see
 * connection.ts). Keys that pages are cut by (cids, deal ids, days) compare
 * bytewise (COLLATE "C"), as SQLite's do, whatever the server's locale.
 */
import {
  gcSweepsTable,
  POSTGRES_DDL,
  resumableUploadsTable,
  signupCodesTable,
  tokensTable,
} from "../shared_tables.ts";

export interface PostgresMigration {
  version: number;
  sql: string;
}

const INITIAL = `
CREATE TABLE pieces (
  cid          TEXT COLLATE "C" PRIMARY KEY,
  size         BIGINT NOT NULL CHECK (size > 0),
  sha256       TEXT CHECK (sha256 IS NULL OR length(sha256) = 64),
  content_type TEXT NOT NULL,
  filename     TEXT,
  created_at   TEXT NOT NULL
);

CREATE TABLE deals (
  id           TEXT COLLATE "C" PRIMARY KEY,
  cid          TEXT COLLATE "C" NOT NULL REFERENCES pieces (cid),
  tier         TEXT NOT NULL CHECK (tier IN ('sponsored', 'token', 'wallet')),
  owner_sub    TEXT,
  owner        TEXT,
  size         BIGINT NOT NULL,
  content_type TEXT NOT NULL,
  filename     TEXT,
  term_days    INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  term_ends_at TEXT NOT NULL
);
CREATE INDEX deals_by_owner ON deals (owner_sub, id);
CREATE INDEX deals_by_cid ON deals (cid);

-- reserved_bytes: uploads in flight on any instance, each also a cap_reservations row.
CREATE TABLE usage_daily (
  subject        TEXT NOT NULL,
  day            TEXT COLLATE "C" NOT NULL,
  bytes          BIGINT NOT NULL DEFAULT 0,
  uploads        BIGINT NOT NULL DEFAULT 0,
  reserved_bytes BIGINT NOT NULL DEFAULT 0 CHECK (reserved_bytes >= 0),
  PRIMARY KEY (subject, day)
);

CREATE TABLE instances (
  id           TEXT PRIMARY KEY,
  started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE cap_reservations (
  id          TEXT PRIMARY KEY,
  subject     TEXT NOT NULL,
  day         TEXT NOT NULL,
  bytes       BIGINT NOT NULL CHECK (bytes >= 0),
  instance_id TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cap_reservations_by_instance ON cap_reservations (instance_id);

${tokensTable(POSTGRES_DDL, { name: "tokens" })}
CREATE INDEX tokens_by_sub ON tokens (sub, issued_at);

${signupCodesTable(POSTGRES_DDL, { perClient: false })}

CREATE TABLE wallet_nonces (
  nonce      TEXT PRIMARY KEY,
  expires_ms BIGINT NOT NULL
);
CREATE INDEX wallet_nonces_by_expiry ON wallet_nonces (expires_ms);

-- mark orders marks for pollers and never repeats (SQLite: AUTOINCREMENT, migration 7).
CREATE TABLE corrupt_pieces (
  cid       TEXT COLLATE "C" PRIMARY KEY REFERENCES pieces (cid),
  mark      BIGSERIAL NOT NULL UNIQUE,
  marked_at TEXT NOT NULL,
  problem   TEXT NOT NULL
);

CREATE TABLE hmac_key (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  key_hex    TEXT NOT NULL,
  rotated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
`;

/** As SQLite's migration 8: a pending code per address and client (pending codes are dropped). */
const SIGNUP_CODES_PER_CLIENT = `
DROP TABLE signup_codes;
${signupCodesTable(POSTGRES_DDL, { perClient: true })}
`;

/** The block index of CAR uploads (SQLite migration 9 has the why). */
const BLOCKS = `
CREATE TABLE blocks (
  multihash    TEXT COLLATE "C" NOT NULL,
  piece_cid    TEXT COLLATE "C" NOT NULL REFERENCES pieces (cid),
  block_offset BIGINT NOT NULL CHECK (block_offset >= 0),
  block_length BIGINT NOT NULL CHECK (block_length >= 0),
  PRIMARY KEY (multihash, piece_cid)
);
CREATE INDEX blocks_by_piece ON blocks (piece_cid);
`;

/**
 * Deals end and pieces go: SQLite's migration 10 (db/sqlite/migrations/
 * 0010_lifecycle.ts says what each table is for). A removal's mark comes from
 * a sequence, so it never repeats, as corrupt marks' do.
 */
const LIFECYCLE = `
ALTER TABLE deals ADD COLUMN deleted_at TEXT;

CREATE TABLE removed_pieces (
  cid         TEXT COLLATE "C" PRIMARY KEY REFERENCES pieces (cid),
  mark        BIGSERIAL NOT NULL UNIQUE,
  removing_at TEXT NOT NULL,
  removed_at  TEXT
);
CREATE INDEX removed_pieces_unfinished ON removed_pieces (mark) WHERE removed_at IS NULL;

CREATE TABLE manifest_pieces (
  manifest_cid TEXT COLLATE "C" NOT NULL REFERENCES pieces (cid),
  piece_cid    TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (manifest_cid, piece_cid)
);
CREATE INDEX manifest_pieces_by_piece ON manifest_pieces (piece_cid, manifest_cid);

CREATE INDEX deals_manifests ON deals (cid)
  WHERE content_type = 'application/vnd.storage-manifest+json';

${gcSweepsTable(POSTGRES_DDL)}
`;

/**
 * Resumable (tus) uploads (SQLite's migration 11, same columns), and the cap
 * reservations they hold: those belong to no instance (instance_id NULL), so
 * an instance's death does not release them; the upload's expiry does.
 */
const RESUMABLE_UPLOADS = `
${resumableUploadsTable(POSTGRES_DDL)}
ALTER TABLE cap_reservations ALTER COLUMN instance_id DROP NOT NULL;
`;

/** Every piece's PieceCIDv2 and its v1 (SQLite's migration 12 has the why). */
const PIECE_CIDS = `
ALTER TABLE pieces ADD COLUMN piece_cid_v2 TEXT COLLATE "C";
ALTER TABLE pieces ADD COLUMN piece_cid_v1 TEXT COLLATE "C";
CREATE INDEX pieces_by_piece_cid_v2 ON pieces (piece_cid_v2) WHERE piece_cid_v2 IS NOT NULL;
CREATE INDEX pieces_by_piece_cid_v1 ON pieces (piece_cid_v1) WHERE piece_cid_v1 IS NOT NULL;
CREATE INDEX pieces_without_piece_cid_v2 ON pieces (cid) WHERE piece_cid_v2 IS NULL;
`;

/**
 * The hand-off to a PDP storage provider: SQLite's migration 13 (db/sqlite/
 * migrations/0013_handoff.ts says what each table is for). Times are Unix
 * milliseconds, as BIGINT.
 */
const HANDOFF = `
CREATE TABLE handoff_pieces (
  cid         TEXT COLLATE "C" PRIMARY KEY,
  provider    TEXT NOT NULL,
  state       TEXT NOT NULL,
  size        BIGINT NOT NULL,
  data_set_id BIGINT,
  piece_id    BIGINT,
  tx_hash     TEXT,
  error       TEXT,
  call_id     TEXT COLLATE "C",
  queued_ms   BIGINT NOT NULL,
  updated_ms  BIGINT NOT NULL
);
CREATE INDEX handoff_pieces_by_state ON handoff_pieces (state, updated_ms);
CREATE INDEX handoff_pieces_by_call ON handoff_pieces (call_id) WHERE call_id IS NOT NULL;

CREATE TABLE handoff_calls (
  id                 TEXT COLLATE "C" PRIMARY KEY,
  provider           TEXT NOT NULL,
  kind               TEXT NOT NULL,
  body               TEXT NOT NULL,
  status_url         TEXT,
  tx_hash            TEXT,
  refusals           INTEGER NOT NULL DEFAULT 0,
  reconcile_until_ms BIGINT,
  opened_ms          BIGINT NOT NULL,
  closed_ms          BIGINT
);
CREATE INDEX handoff_calls_open ON handoff_calls (kind, opened_ms) WHERE closed_ms IS NULL;

CREATE TABLE handoff_data_sets (
  provider           TEXT PRIMARY KEY,
  client_data_set_id TEXT NOT NULL,
  data_set_id        BIGINT,
  call_id            TEXT COLLATE "C"
);
`;

/** The page's cookie sessions (SQLite's migration 16 has the why). */
const SESSIONS = `
CREATE TABLE sessions (
  id_hash    TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
  jti        TEXT NOT NULL,
  expires_ms BIGINT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_ms);
`;

/** Signed upload links (SQLite's migration 17 has the why). */
const UPLOAD_LINKS = `
CREATE TABLE upload_links (
  id_hash      TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
  jti          TEXT NOT NULL,
  cid          TEXT COLLATE "C" NOT NULL,
  size         BIGINT NOT NULL CHECK (size > 0),
  content_type TEXT NOT NULL,
  filename     TEXT,
  expires_ms   BIGINT NOT NULL
);
CREATE INDEX upload_links_by_expiry ON upload_links (expires_ms);
`;

/**
 * The RSA keys of --token-alg RS256, shared by every instance (rsa_keys.ts):
 * one row a key, the signing key the only one without a retirement and the
 * only one with its private half (JSON Web Keys, as text).
 */
const RSA_KEYS = `
CREATE TABLE rsa_keys (
  kid         TEXT COLLATE "C" PRIMARY KEY,
  created_at  TEXT NOT NULL,
  retires_at  TEXT,
  public_jwk  TEXT NOT NULL,
  private_jwk TEXT,
  CHECK ((retires_at IS NULL) = (private_jwk IS NOT NULL))
);
CREATE UNIQUE INDEX rsa_keys_one_signing ON rsa_keys ((retires_at IS NULL))
  WHERE retires_at IS NULL;
`;

/** A client's unfinished resumable uploads, counted at each creation (SQLite's migration 15). */
const OPEN_UPLOADS_BY_SUBJECT = `
CREATE INDEX resumable_uploads_open_by_subject ON resumable_uploads (usage_subject)
  WHERE deal_id IS NULL;
`;

/** A resumable upload's last activity and released reservation, in its record (SQLite's 18). */
const UPLOAD_ACTIVITY = `
ALTER TABLE resumable_uploads ADD COLUMN last_activity_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE resumable_uploads ADD COLUMN reservation_released BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE resumable_uploads SET last_activity_ms = expires_ms - 86400000;
CREATE INDEX resumable_uploads_idle ON resumable_uploads (last_activity_ms, id)
  WHERE deal_id IS NULL AND NOT reservation_released AND tier = 'sponsored';
`;

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  { version: 1, sql: INITIAL },
  { version: 2, sql: SIGNUP_CODES_PER_CLIENT },
  { version: 3, sql: BLOCKS },
  { version: 4, sql: LIFECYCLE },
  { version: 5, sql: RESUMABLE_UPLOADS },
  { version: 6, sql: PIECE_CIDS },
  { version: 7, sql: HANDOFF },
  { version: 8, sql: OPEN_UPLOADS_BY_SUBJECT },
  // 9 is not used: the runner takes gaps.
  { version: 10, sql: SESSIONS },
  { version: 11, sql: UPLOAD_LINKS },
  { version: 12, sql: RSA_KEYS },
  { version: 13, sql: UPLOAD_ACTIVITY },
];
