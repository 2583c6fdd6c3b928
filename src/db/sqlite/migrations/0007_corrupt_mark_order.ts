/**
 * Corrupt marks get a number that never repeats. Pollers (catalog/
 * corrupt_watch.ts) read "marks after the last one seen", and the rowid they
 * used is reused by SQLite once the newest rows are deleted: a piece marked,
 * repaired and marked again could come back with an old number and never be
 * seen. AUTOINCREMENT never hands a number out twice. Existing rows keep
 * their rowid as their mark.
 */
export const sql = `
CREATE TABLE corrupt_pieces_rebuilt (
  mark      INTEGER PRIMARY KEY AUTOINCREMENT,
  cid       TEXT NOT NULL UNIQUE REFERENCES pieces (cid),
  marked_at TEXT NOT NULL,
  problem   TEXT NOT NULL
) STRICT;

INSERT INTO corrupt_pieces_rebuilt (mark, cid, marked_at, problem)
  SELECT rowid, cid, marked_at, problem FROM corrupt_pieces;
DROP TABLE corrupt_pieces;
ALTER TABLE corrupt_pieces_rebuilt RENAME TO corrupt_pieces;
`;
