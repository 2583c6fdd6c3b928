/**
 * Every piece gets a PieceCIDv2, the name a Filecoin storage provider pulls
 * it by from /piece/ (docs/api.md#piece-gateway). `piece_cid_v2` is known at
 * upload for a piece stored under a piece cid, and computed from the stored
 * bytes afterwards for any other (src/catalog/digests.ts): NULL until then,
 * so rows from before this migration are filled in by the same background
 * pass after start. `piece_cid_v1` (the root alone) is kept beside it, so a
 * piece stored under its v2 or under an opaque name is found by its v1 too.
 * Neither is unique: the same bytes may be stored under several names, and
 * payloads that differ only in trailing zeros share a v1.
 */
export const sql = `
ALTER TABLE pieces ADD COLUMN piece_cid_v2 TEXT;
ALTER TABLE pieces ADD COLUMN piece_cid_v1 TEXT;
CREATE INDEX pieces_by_piece_cid_v2 ON pieces (piece_cid_v2) WHERE piece_cid_v2 IS NOT NULL;
CREATE INDEX pieces_by_piece_cid_v1 ON pieces (piece_cid_v1) WHERE piece_cid_v1 IS NOT NULL;
-- Start-up finds the pieces still waiting for their PieceCIDv2 without a table scan.
CREATE INDEX pieces_without_piece_cid_v2 ON pieces (cid) WHERE piece_cid_v2 IS NULL;
`;
