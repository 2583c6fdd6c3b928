/**
 * The wallet tier. A token now belongs to an e-mail address (with a quota in
 * MiB) or to a wallet (its EIP-55 address, the quota read from the chain), so
 * `email` and `quota_mb` become optional and `wallet` joins them; SQLite
 * cannot relax NOT NULL in place, so the table is rebuilt. A deal's owner may
 * be an address too, so its column loses the `email` from its name. Sign-in
 * nonces live here so that a nonce stays single-use across a restart.
 */
import { SQLITE_DDL, tokensTable } from "../../shared_tables.ts";

export const sql = `
${tokensTable(SQLITE_DDL, { name: "tokens_rebuilt" })}

INSERT INTO tokens_rebuilt (jti, sub, email, label, scopes, quota_mb, issued_at, expires_at,
                            revoked_at)
  SELECT jti, sub, email, label, scopes, quota_mb, issued_at, expires_at, revoked_at FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_rebuilt RENAME TO tokens;
CREATE INDEX tokens_by_sub ON tokens (sub, issued_at);

ALTER TABLE deals RENAME COLUMN owner_email TO owner;

CREATE TABLE wallet_nonces (
  nonce      TEXT PRIMARY KEY,
  expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX wallet_nonces_by_expiry ON wallet_nonces (expires_ms);
`;
