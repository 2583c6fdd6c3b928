/**
 * The two piece-cid columns of a piece's row, as both dialects and the row
 * copies write them: `piece_cid_v2` as the record has it, and `piece_cid_v1`
 * derived from it (the records never carry the v1: it is only what /piece/
 * finds a piece by when asked for its v1; see migration 0012_piece_cids).
 */
import type { PieceRecord } from "../domain/catalog_records.ts";
import { pieceCidV1OfV2 } from "../kernel/piece_cid/piece_cid_forms.ts";

/** [piece_cid_v2, piece_cid_v1] of a piece's row; both null until its v2 is known. */
export function pieceCidsOf(
  piece: Pick<PieceRecord, "pieceCidV2">,
): [string | null, string | null] {
  const v2 = piece.pieceCidV2 ?? null;
  return [v2, v2 === null ? null : pieceCidV1OfV2(v2)];
}

/**
 * The order findPieceByPieceCid picks among pieces sharing a piece cid: one
 * that can be served first (stored, not marked corrupt), then the oldest.
 * Over the records' joins (p: pieces, c: corrupt_pieces, r: removed_pieces).
 */
export const SERVABLE_FIRST =
  `(r.removing_at IS NOT NULL OR c.marked_at IS NOT NULL), p.created_at, p.cid`;
