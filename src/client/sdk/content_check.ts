/**
 * Checks downloaded bytes against the cid they were asked for, as they
 * stream: a PieceCIDv2 is recomputed whole (root, height, padding: so the
 * size too), a PieceCIDv1 by its root, a raw sha2-256 CIDv1 by the SHA-256 of
 * the bytes. Any other cid is an opaque name that says nothing about the
 * bytes, so there is nothing to check (docs/api.md#post-apiupload).
 */
import { ParallelPieceHasher, parseCid } from "../../kernel/piece_cid/mod.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/mod.ts";
import { VerificationError } from "./errors.ts";
import type { IncrementalSha256 } from "./types.ts";

export interface ContentCheck {
  /** The payload size the cid itself fixes (PieceCIDv2), else null. */
  readonly fixedSize: number | null;
  /** Sees every chunk in order; may ask the producer to wait. */
  update(chunk: Uint8Array): Promise<void> | undefined;
  /** Throws VerificationError unless the bytes seen hash to the cid. */
  finish(): Promise<void>;
}

export interface ContentCheckOptions {
  pool: HashWorkerPool | null;
  sha256: () => IncrementalSha256;
}

/** The check for a cid, or null when the cid is opaque and cannot be checked. */
export function contentCheckFor(cid: string, options: ContentCheckOptions): ContentCheck | null {
  const parsed = parseCid(cid.toLowerCase());
  const mismatch = () =>
    new VerificationError(cid, "cid", `The bytes received for ${cid} do not match the cid`);
  switch (parsed.kind) {
    case "opaque":
      return null;
    case "sha256": {
      const sha = options.sha256();
      return {
        fixedSize: null,
        update: (chunk) => void sha.update(chunk),
        finish: () => {
          if (!sameBytes(sha.digest(), parsed.digest)) return Promise.reject(mismatch());
          return Promise.resolve();
        },
      };
    }
    case "piece_v1":
    case "piece_v2": {
      const hasher = new ParallelPieceHasher({ pool: options.pool });
      return {
        fixedSize: parsed.kind === "piece_v2" ? parsed.payloadSize : null,
        update: (chunk) => hasher.update(chunk),
        finish: async () => {
          const digest = await hasher.digest();
          const same = sameBytes(digest.root, parsed.root) &&
            (parsed.kind === "piece_v1" ||
              (digest.height === parsed.height && digest.padding === parsed.padding));
          if (!same) throw mismatch();
        },
      };
    }
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
