/**
 * Piece CIDs for clients and the server: compute a PieceCIDv2 (FRC-0069) and
 * the matching v1 from bytes or a stream, and read which form a cid string
 * is. No file-system or network access; the WebAssembly kernel is embedded.
 *
 * @example
 * import { pieceCidOfStream } from "./src/kernel/piece_cid/mod.ts";
 * const file = await Deno.open("video.mp4");
 * const { cid, size } = await pieceCidOfStream(file.readable);
 * // POST /api/upload?cid=<cid> with the same bytes
 */
import { pieceCidV1, pieceCidV2 } from "./cid_codec.ts";
import { ParallelPieceHasher } from "./parallel.ts";
import type { HashWorkerPool } from "./pool.ts";

export { parseCid, pieceCidV1, pieceCidV2, sha256Cid } from "./cid_codec.ts";
export type { ParsedCid } from "./cid_codec.ts";
export { PieceHasher, treeShape } from "./hasher.ts";
export type { PieceDigest } from "./hasher.ts";
export { ParallelPieceHasher } from "./parallel.ts";
export { HashWorkerPool } from "./pool.ts";

export interface PieceCidResult {
  /** PieceCIDv2 (bafkzcib…): root, height and padding. */
  cid: string;
  /** PieceCIDv1 (baga6ea4seaq…): the root alone. */
  cidV1: string;
  size: number;
}

/**
 * Computes the piece cids of everything a stream yields. Pass a pool to hash
 * on several cores; without one, hashing runs on the calling thread.
 */
export async function pieceCidOfStream(
  stream: ReadableStream<Uint8Array>,
  options: { pool?: HashWorkerPool | null } = {},
): Promise<PieceCidResult> {
  const hasher = new ParallelPieceHasher({ pool: options.pool ?? null });
  for await (const chunk of stream) {
    const wait = hasher.update(chunk);
    if (wait) await wait;
  }
  const digest = await hasher.digest();
  return {
    cid: pieceCidV2(digest.root, digest.height, digest.padding),
    cidV1: pieceCidV1(digest.root),
    size: digest.size,
  };
}
