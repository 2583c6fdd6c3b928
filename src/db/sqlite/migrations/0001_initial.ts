/**
 * Pieces (bytes under a cid), deals (one per successful upload) and daily
 * usage counters. Timestamps are RFC 3339 UTC strings; days are YYYY-MM-DD.
 */
export const sql = `
CREATE TABLE pieces (
  cid          TEXT PRIMARY KEY,
  size         INTEGER NOT NULL CHECK (size > 0),
  sha256       TEXT NOT NULL CHECK (length(sha256) = 64),
  content_type TEXT NOT NULL,
  filename     TEXT,
  created_at   TEXT NOT NULL
) STRICT;

CREATE TABLE deals (
  id           TEXT PRIMARY KEY,
  cid          TEXT NOT NULL REFERENCES pieces(cid),
  tier         TEXT NOT NULL CHECK (tier IN ('sponsored', 'token', 'wallet')),
  owner_sub    TEXT,
  owner_email  TEXT,
  size         INTEGER NOT NULL,
  content_type TEXT NOT NULL,
  filename     TEXT,
  term_days    INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  term_ends_at TEXT NOT NULL
) STRICT;

CREATE INDEX deals_by_owner ON deals (owner_sub, id);
CREATE INDEX deals_by_cid ON deals (cid);

-- subject is "ip:<client key>" for sponsored uploads, "user:<sub>" for token uploads.
CREATE TABLE usage_daily (
  subject TEXT NOT NULL,
  day     TEXT NOT NULL,
  bytes   INTEGER NOT NULL DEFAULT 0,
  uploads INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (subject, day)
) STRICT, WITHOUT ROWID;
`;
