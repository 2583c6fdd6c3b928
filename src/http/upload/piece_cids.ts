/**
 * GET /api/piece-cids — public: which cid forms the service accepts, which it
 * verifies, and how a client computes them.
 *
 * POST /api/piece-cids [put] — the server computes the PieceCIDv2 of a body:
 * `{cid, size}`. Same framing rules and per-file cap as an upload; nothing is
 * stored and no quota is charged. Their docs are in http/docs/upload_docs.ts.
 */
import { ApiError } from "../../kernel/errors.ts";
import { requireTokenScope } from "../../auth/scopes.ts";
import type { Config } from "../../config/mod.ts";
import { pieceCidV2 } from "../../kernel/piece_cid/cid_codec.ts";
import { ParallelPieceHasher } from "../../kernel/piece_cid/parallel.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/pool.ts";
import type { UploadPolicies } from "../../limits/tiers.ts";
import { pumpBody } from "../../driver/body_pump.ts";
import { requireContentLength } from "../pipeline/body.ts";
import { notAdmitted } from "../../limits/upload_admission.ts";
import type { UploadAdmission } from "../../limits/upload_admission.ts";
import { jsonResponse } from "../pipeline/json.ts";
import { apiErrorOfStoreFailure } from "../../uploads/store_errors.ts";
import type { Handler } from "../pipeline/router.ts";
import type { PieceCidForm, PieceCidInfo, PieceCidResult } from "../../kernel/wire.ts";

export const PIECE_CID_FORMS: PieceCidForm[] = [
  {
    name: "PieceCIDv2",
    example: "bafkzcib…",
    spec: "FRC-0069",
    cid: "CIDv1, multibase base32 (b…), codec raw (0x55)",
    multihash: "fr32-sha2-256-trunc254-padded-binary-tree (0x1011)",
    digest: "uvarint padding ‖ 1-byte tree height ‖ 32-byte root",
    howToCompute: "Fr32-pad every 127 bytes into 128, zero-pad to a power of two, build a " +
      "SHA-256 binary Merkle tree with the top two bits of every node cleared; the root, " +
      "tree height and padding form the digest (synapse-sdk and go-fil-commp produce it).",
    verified: true,
  },
  {
    name: "PieceCIDv1",
    example: "baga6ea4seaq…",
    cid: "CIDv1, multibase base32, codec fil-commitment-unsealed (0xf101)",
    multihash: "sha2-256-trunc254-padded (0x1012)",
    howToCompute: "The same Merkle root as PieceCIDv2, without height and padding.",
    verified: true,
  },
  {
    name: "CIDv1 sha2-256",
    example: "bafkrei…",
    cid: "CIDv1, multibase base32, any codec (raw 0x55 usual)",
    multihash: "sha2-256 (0x12) of the bytes",
    howToCompute: "SHA-256 of the whole body.",
    verified: true,
  },
  {
    name: "opaque",
    example: "myfile2026v1",
    cid: "anything matching ^[a-z0-9]{8,80}$ (case-insensitive) that is none of the above",
    howToCompute: "Chosen by the client; stored unverified. Bytes under a stored cid never change.",
    verified: false,
  },
];

export function createPieceCidsInfoHandler(config: Config): Handler {
  return () => jsonResponse(200, pieceCidInfo(config), { "cache-control": "public, max-age=300" });
}

function pieceCidInfo(config: Config): PieceCidInfo {
  return {
    pattern: "^[a-z0-9]{8,80}$",
    caseInsensitive: true,
    opaqueAccepted: !config.requireVerifiableCids,
    forms: PIECE_CID_FORMS,
    compute: "POST /api/piece-cids with the bytes (token with put scope) returns {cid, size}",
  };
}

export interface ComputeDeps {
  policies: UploadPolicies;
  hashPool: HashWorkerPool | null;
  /** The same bounds as uploads: this body pins the same read buffers, and a hashing segment. */
  admission: UploadAdmission;
}

export function createComputePieceCidHandler(deps: ComputeDeps): Handler {
  return async (request, context) => {
    const caller = requireTokenScope(await context.caller(), "put");
    const length = requireContentLength(request.headers);
    const { maxFileBytes } = deps.policies.fileCapOf(caller);
    if (maxFileBytes !== null && length > maxFileBytes) {
      throw new ApiError("too_large", `Body exceeds the per-file limit of ${maxFileBytes} bytes`);
    }
    if (!request.body) throw new ApiError("no_body", "Request body is required");
    const admitted = deps.admission.admit(
      { clientKey: context.clientKey, subject: caller.sub },
      length,
    );
    if (!admitted.ok) throw notAdmitted(admitted.reason);
    const hasher = new ParallelPieceHasher({ pool: deps.hashPool });
    try {
      // The same reading as an upload's (length enforced, stalls timed out), into no store.
      await pumpBody(request.body, {
        expectedBytes: length,
        idleTimeoutMs: context.bodyIdleTimeoutMs,
        minRate: context.bodyMinRate,
        signal: context.signal,
        computeSha256: false,
        onChunk: (chunk) => hasher.update(chunk),
      }, () => Promise.resolve()).catch((error) => {
        throw apiErrorOfStoreFailure(error);
      });
    } finally {
      admitted.release();
    }
    const digest = await hasher.digest();
    context.logFields.bytesIn = length;
    const result: PieceCidResult = {
      cid: pieceCidV2(digest.root, digest.height, digest.padding),
      size: length,
    };
    return jsonResponse(200, result);
  };
}
