/**
 * Signup codes of `--signup verify`: one pending code per e-mail address (a
 * new signup replaces it, keeping its count of wrong tries), stored as its
 * SHA-256 with the token fields it will mint, when it was sent and when it
 * expires.
 */
export const sql = `
CREATE TABLE signup_codes (
  email      TEXT PRIMARY KEY,
  code_hash  TEXT NOT NULL,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0
) STRICT;
`;
