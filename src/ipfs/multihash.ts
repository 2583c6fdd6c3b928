/**
 * The multihashes the IPFS side of the service knows: which it verifies
 * (sha2-256, and identity, whose digest is the data itself) and the names of
 * the others, so a refusal says which hash a block used.
 */
export const IDENTITY_MULTIHASH = 0x00;
export const SHA2_256_MULTIHASH = 0x12;

/** Names from the multicodec table, for messages only. */
const NAMES: Record<number, string> = {
  0x00: "identity",
  0x11: "sha1",
  0x12: "sha2-256",
  0x13: "sha2-512",
  0x14: "sha3-512",
  0x15: "sha3-384",
  0x16: "sha3-256",
  0x17: "sha3-224",
  0x1a: "keccak-224",
  0x1b: "keccak-256",
  0x1c: "keccak-384",
  0x1d: "keccak-512",
  0x1e: "blake3",
  0x20: "sha2-384",
  0x56: "dbl-sha2-256",
  0xd5: "md5",
  0x1011: "fr32-sha2-256-trunc254-padded-binary-tree",
  0x1012: "sha2-256-trunc254-padded",
  0x1013: "sha2-224",
  0x1014: "sha2-512-224",
  0x1015: "sha2-512-256",
  0xb220: "blake2b-256",
  0xb240: "blake2b-512",
  0xb260: "blake2s-256",
  0x534d: "sha2-256-chunked",
};

/** "blake2b-256" for 0xb220; "unknown" for a code not in the table. */
export function multihashName(code: number): string {
  return NAMES[code] ?? "unknown";
}
