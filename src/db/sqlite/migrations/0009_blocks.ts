/**
 * The block index: where each block of a CAR upload lies in its piece, so
 * the IPFS gateway reads one block by offset instead of the CAR from its
 * start. Keyed by multihash (lowercase hex of code, length and digest), not
 * by cid: one block has several cids (CIDv0 and CIDv1, other codecs), and a
 * gateway is asked for any of them. The same block in two pieces has a row
 * for each, so it stays served while either piece is.
 */
export const sql = `
CREATE TABLE blocks (
  multihash    TEXT NOT NULL,
  piece_cid    TEXT NOT NULL REFERENCES pieces (cid),
  block_offset INTEGER NOT NULL CHECK (block_offset >= 0),
  block_length INTEGER NOT NULL CHECK (block_length >= 0),
  PRIMARY KEY (multihash, piece_cid)
) STRICT, WITHOUT ROWID;

CREATE INDEX blocks_by_piece ON blocks (piece_cid);
`;
