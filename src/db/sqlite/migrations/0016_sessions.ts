/**
 * Cookie sessions of the web page (`POST /api/auth/session`). A row is the
 * SHA-256 (hex) of the cookie's secret, never the secret: a copied database
 * or backup signs no one in. A session acts as its token (`jti`) and ends
 * with it: revocation is read from the token's row on every request, and
 * `expires_ms` is the token's expiry.
 */
export const sql = `
CREATE TABLE sessions (
  id_hash    TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
  jti        TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_expiry ON sessions (expires_ms);
`;
