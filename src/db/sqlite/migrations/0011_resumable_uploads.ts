/**
 * Resumable (tus) uploads: one row each from creation until a day after it
 * finished or after its last byte. The bytes live in the store's partial
 * area; `staging` is the store's description of them. The cap reservation
 * of the length is named here, so a restart can hold it again (the daily-cap
 * ledger of a data directory keeps reservations in memory). `deal_id` is set
 * in the same transaction as the deal the last byte made, with `roots` (a
 * JSON array) when the upload was a CAR, for the finished upload's result.
 */
export const sql = `
CREATE TABLE resumable_uploads (
  id              TEXT PRIMARY KEY,
  cid             TEXT NOT NULL,
  length          INTEGER NOT NULL CHECK (length > 0),
  received        INTEGER NOT NULL DEFAULT 0 CHECK (received >= 0 AND received <= length),
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
  expires_ms      INTEGER NOT NULL,
  deal_id         TEXT,
  roots           TEXT
) STRICT;
CREATE INDEX resumable_uploads_by_expiry ON resumable_uploads (expires_ms);
`;
