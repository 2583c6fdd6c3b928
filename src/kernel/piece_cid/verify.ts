/**
 * Checks uploaded bytes against the cid they are uploaded under, while they
 * stream to disk. PieceCIDv1/v2 are recomputed by the (parallel) piece hasher;
 * a sha2-256 CIDv1 is compared with the staged piece's SHA-256 (ask the store
 * to compute it on the way: StageOptions.computeSha256); opaque cids cannot be
 * checked.
 */
import type { ParsedCid } from "./cid_codec.ts";
import { ParallelPieceHasher } from "./parallel.ts";
import type { HashWorkerPool } from "./pool.ts";

/**
 * What `matches` needs of the staged bytes: their SHA-256, computed on the way
 * or read back (a store's StagedPiece is one; this folder knows no store).
 */
export interface StagedDigest {
  computeSha256(): Promise<string>;
}

export interface CidVerifier {
  /** Sees every chunk in order (copies what it keeps); may ask the producer to wait. */
  onChunk(chunk: Uint8Array): Promise<void> | undefined;
  /** True when the staged bytes hash to the cid. */
  matches(staged: StagedDigest): Promise<boolean>;
  /** Whether `matches` needs the SHA-256 of the bytes (cheapest computed on the way). */
  readonly usesSha256: boolean;
}

export function createCidVerifier(
  parsed: ParsedCid,
  pool: HashWorkerPool | null,
): CidVerifier | null {
  switch (parsed.kind) {
    case "opaque":
      return null;
    case "sha256": {
      const expected = parsed.digest.toHex();
      return {
        onChunk: () => undefined,
        matches: async (staged) => await staged.computeSha256() === expected,
        usesSha256: true,
      };
    }
    case "piece_v1":
    case "piece_v2": {
      const hasher = new ParallelPieceHasher({ pool });
      return {
        onChunk: (chunk) => hasher.update(chunk),
        matches: async () => {
          const digest = await hasher.digest();
          if (!equalBytes(digest.root, parsed.root)) return false;
          return parsed.kind === "piece_v1" ||
            (digest.height === parsed.height && digest.padding === parsed.padding);
        },
        usesSha256: false,
      };
    }
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
