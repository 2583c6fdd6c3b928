/**
 * Signup codes per address and client: each client that asks for a code for
 * an address gets its own, with its own tries, so nobody can use up the tries
 * of the address's owner (or replace the code the owner was sent). Pending
 * codes live 15 minutes; those in flight at the upgrade are dropped, and their
 * people sign up again.
 */
export const sql = `
DROP TABLE signup_codes;
CREATE TABLE signup_codes (
  email      TEXT NOT NULL,
  client_key TEXT NOT NULL,
  code_hash  TEXT NOT NULL,
  label      TEXT NOT NULL,
  scopes     TEXT NOT NULL,
  quota_mb   INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (email, client_key)
) STRICT;
`;
