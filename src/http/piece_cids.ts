/**
 * GET /api/piece-cids — public: which cid forms the service accepts and how
 * a client computes them. Today every form is stored as given (verification
 * in the upload stream is the next piece of work); the `verified` flags say
 * so honestly, so clients can tell when it changes.
 */
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";

export const PIECE_CID_FORMS = [
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
    verified: false,
  },
  {
    name: "PieceCIDv1",
    example: "baga6ea4seaq…",
    cid: "CIDv1, multibase base32, codec fil-commitment-unsealed (0xf101)",
    multihash: "sha2-256-trunc254-padded (0x1012)",
    howToCompute: "The same Merkle root as PieceCIDv2, without height and padding.",
    verified: false,
  },
  {
    name: "CIDv1 sha2-256",
    example: "bafkrei…",
    cid: "CIDv1, multibase base32, any codec (raw 0x55 usual)",
    multihash: "sha2-256 (0x12) of the bytes",
    howToCompute: "SHA-256 of the whole body.",
    verified: false,
  },
  {
    name: "opaque",
    example: "myfile2026v1",
    cid: "anything matching ^[a-z0-9]{8,80}$ (case-insensitive) that is none of the above",
    howToCompute: "Chosen by the client; stored unverified. Bytes under a stored cid never change.",
    verified: false,
  },
];

export const pieceCidsHandler: Handler = () =>
  jsonResponse(200, {
    pattern: "^[a-z0-9]{8,80}$",
    caseInsensitive: true,
    forms: PIECE_CID_FORMS,
  }, { "cache-control": "public, max-age=300" });
