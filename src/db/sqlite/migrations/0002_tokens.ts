/**
 * Token metadata. The token itself is never stored: only what is needed to
 * list, audit and revoke it. A jti missing from this table was not issued by
 * this service and is refused.
 */
export const sql = `
CREATE TABLE tokens (
  jti        TEXT PRIMARY KEY,
  sub        TEXT NOT NULL,
  email      TEXT NOT NULL,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER NOT NULL,
  issued_at  TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT
) STRICT;

CREATE INDEX tokens_by_sub ON tokens (sub, issued_at);
`;
