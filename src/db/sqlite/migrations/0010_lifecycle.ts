/**
 * Deals end and pieces go (docs/api.md#lifecycle, docs/operations.md#garbage-
 * collection). A deal's owner may delete it (`deleted_at`); a sweep removes
 * the bytes of a piece no deal wants any more, in three steps that survive a
 * crash: a row here with `removing_at` (retrieval answers 410 gone from then
 * on), the bytes deleted, then `removed_at`. An upload of the bytes again
 * deletes the row. The mark numbers them for pollers, as corrupt_pieces'
 * does (AUTOINCREMENT: never handed out twice).
 *
 * A manifest's deal keeps the pieces it lists, so what each manifest lists
 * is recorded when it is uploaded; a manifest lists itself too, which marks
 * it as read (one uploaded before this migration is read by the next sweep:
 * deals_manifests finds them). gc_sweeps keeps the last sweep for /healthz.
 */
import { gcSweepsTable, SQLITE_DDL } from "../../shared_tables.ts";

export const sql = `
ALTER TABLE deals ADD COLUMN deleted_at TEXT;

CREATE TABLE removed_pieces (
  mark        INTEGER PRIMARY KEY AUTOINCREMENT,
  cid         TEXT NOT NULL UNIQUE REFERENCES pieces (cid),
  removing_at TEXT NOT NULL,
  removed_at  TEXT
) STRICT;
CREATE INDEX removed_pieces_unfinished ON removed_pieces (mark) WHERE removed_at IS NULL;

CREATE TABLE manifest_pieces (
  manifest_cid TEXT NOT NULL REFERENCES pieces (cid),
  piece_cid    TEXT NOT NULL,
  PRIMARY KEY (manifest_cid, piece_cid)
) STRICT, WITHOUT ROWID;
CREATE INDEX manifest_pieces_by_piece ON manifest_pieces (piece_cid, manifest_cid);

CREATE INDEX deals_manifests ON deals (cid)
  WHERE content_type = 'application/vnd.storage-manifest+json';

${gcSweepsTable(SQLITE_DDL)}
`;
