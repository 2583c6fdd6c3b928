/**
 * The block index without its foreign key to pieces: a CAR's rows are now
 * written before its piece's row, a slice per transaction, so that a CAR of
 * many blocks never holds the event loop (db/sqlite/block_records.ts). The
 * query sees a row only while its piece is stored, which is what the key
 * held before; rows whose piece never came are cleared by the next upload
 * of that cid. Rebuilt as SQLite asks (new table, copy, drop, rename).
 */
export const sql = `
CREATE TABLE blocks_rebuilt (
  multihash    TEXT NOT NULL,
  piece_cid    TEXT NOT NULL,
  block_offset INTEGER NOT NULL CHECK (block_offset >= 0),
  block_length INTEGER NOT NULL CHECK (block_length >= 0),
  PRIMARY KEY (multihash, piece_cid)
) STRICT, WITHOUT ROWID;
INSERT INTO blocks_rebuilt (multihash, piece_cid, block_offset, block_length)
  SELECT multihash, piece_cid, block_offset, block_length FROM blocks;
DROP TABLE blocks;
ALTER TABLE blocks_rebuilt RENAME TO blocks;
CREATE INDEX blocks_by_piece ON blocks (piece_cid);
`;
