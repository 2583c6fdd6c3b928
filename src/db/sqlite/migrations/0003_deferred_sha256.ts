/**
 * A piece's SHA-256 may be unknown for a moment: a first upload of a cid is
 * acknowledged without hashing on the receiving thread, and the digest is
 * read back from the stored bytes afterwards (src/catalog/digests.ts). SQLite
 * cannot relax NOT NULL in place, so the table is rebuilt (foreign keys are
 * off for this migration; see Migration.rebuildsTables).
 */
export const sql = `
CREATE TABLE pieces_rebuilt (
  cid          TEXT PRIMARY KEY,
  size         INTEGER NOT NULL CHECK (size > 0),
  sha256       TEXT CHECK (sha256 IS NULL OR length(sha256) = 64),
  content_type TEXT NOT NULL,
  filename     TEXT,
  created_at   TEXT NOT NULL
) STRICT;

INSERT INTO pieces_rebuilt (cid, size, sha256, content_type, filename, created_at)
  SELECT cid, size, sha256, content_type, filename, created_at FROM pieces;
DROP TABLE pieces;
ALTER TABLE pieces_rebuilt RENAME TO pieces;

-- Start-up finds the pieces still waiting for their digest without a table scan.
CREATE INDEX pieces_without_sha256 ON pieces (cid) WHERE sha256 IS NULL;
`;
