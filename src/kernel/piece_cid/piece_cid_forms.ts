/**
 * A piece's PieceCIDv2 and PieceCIDv1 from what is already known, without
 * reading a byte: the /piece/ gateway finds every piece by both forms, so
 * each stored piece records its v2 (and the v1 beside it, for the lookup).
 * A piece stored under a PieceCIDv2 is its own v2; one stored under a
 * PieceCIDv1 gets the v2 from the v1's root and the stored size (FRC-0069:
 * the size fixes the tree's height and padding, the root is the same). Any
 * other cid says nothing about the piece commitment: its bytes must be hashed
 * (catalog/digests.ts does it after the upload).
 */
import { parseCid, pieceCidV1, pieceCidV2 } from "./cid_codec.ts";
import { treeShape } from "./hasher.ts";

/** The PieceCIDv2 of `size` bytes stored under `cid`, when the cid alone fixes it; else null. */
export function pieceCidV2Known(cid: string, size: number): string | null {
  const parsed = parseCid(cid);
  if (parsed.kind === "piece_v2") return parsed.payloadSize === size ? cid : null;
  if (parsed.kind !== "piece_v1") return null;
  const { height, padding } = treeShape(size);
  return pieceCidV2(parsed.root, height, padding);
}

/** The PieceCIDv1 (the root alone) of a PieceCIDv2; null if it is not one. */
export function pieceCidV1OfV2(v2: string): string | null {
  const parsed = parseCid(v2);
  return parsed.kind === "piece_v2" ? pieceCidV1(parsed.root) : null;
}
