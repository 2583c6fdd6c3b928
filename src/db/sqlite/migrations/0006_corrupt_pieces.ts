/**
 * Pieces whose stored bytes failed a scrub (src/ops/scrub.ts): a wrong
 * size, SHA-256 or cid, or no file at all. Retrieval answers 503
 * piece_corrupt for them instead of serving wrong bytes; an upload of the
 * right bytes, or a scrub that finds them right again (restored from a
 * backup), removes the row. A table of its own rather than a column of
 * pieces: a running server polls it for marks made by another process
 * (`main.ts scrub`), and it is empty but for the rare bad piece.
 */
export const sql = `
CREATE TABLE corrupt_pieces (
  cid       TEXT PRIMARY KEY REFERENCES pieces (cid),
  marked_at TEXT NOT NULL,
  problem   TEXT NOT NULL
) STRICT;
`;
