/**
 * Signup codes of `--signup verify`: one pending code per e-mail address (a
 * new signup replaces it), stored as its SHA-256 with the token fields it
 * will mint, an expiry and a count of wrong tries.
 */
export const sql = `
CREATE TABLE signup_codes (
  email      TEXT PRIMARY KEY,
  code_hash  TEXT NOT NULL,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER NOT NULL,
  expires_at TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0
) STRICT;
`;
