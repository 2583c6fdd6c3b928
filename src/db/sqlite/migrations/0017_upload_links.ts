/**
 * Signed upload links (`POST /api/upload-links`): the terms one credential-less
 * `POST` may store, for whom, until when. A row is keyed by the SHA-256 (hex)
 * of the link's secret, never the secret, so a copied database holds no
 * working link; spending a link deletes its row, so it works once.
 */
export const sql = `
CREATE TABLE upload_links (
  id_hash      TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
  jti          TEXT NOT NULL,
  cid          TEXT NOT NULL,
  size         INTEGER NOT NULL CHECK (size > 0),
  content_type TEXT NOT NULL,
  filename     TEXT,
  expires_ms   INTEGER NOT NULL
) STRICT;
CREATE INDEX upload_links_by_expiry ON upload_links (expires_ms);
`;
