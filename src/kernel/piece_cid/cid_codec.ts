/**
 * The cid forms the service can verify, read from the cid string alone:
 *
 *   PieceCIDv2  CIDv1, raw (0x55), multihash 0x1011 fr32-sha2-256-trunc254-padded-binary-tree,
 *               digest = uvarint padding ‖ 1-byte height ‖ 32-byte root   ("bafkzcib…")
 *   PieceCIDv1  CIDv1, fil-commitment-unsealed (0xf101), multihash 0x1012 sha2-256-trunc254-padded,
 *               digest = 32-byte root                                     ("baga6ea4seaq…")
 *   sha256      CIDv1, raw (0x55), multihash 0x12 sha2-256, 32-byte digest ("bafkrei…")
 *   opaque      anything else: a name the service cannot check. That includes sha2-256
 *               CIDs of other codecs (dag-pb "bafybei…", dag-cbor "bafyrei…"): they hash
 *               an encoded block or a DAG root (`ipfs add` of a large file), not the
 *               file's bytes, so comparing them with the bytes would refuse real files.
 *
 * Only multibase base32 ("b", lowercase; the service lowercases cids) is read.
 */

export const RAW_CODEC = 0x55;
export const FIL_COMMITMENT_UNSEALED = 0xf101;
export const PIECE_V2_MULTIHASH = 0x1011;
export const PIECE_V1_MULTIHASH = 0x1012;
export const SHA2_256_MULTIHASH = 0x12;

export type ParsedCid =
  | { kind: "piece_v2"; root: Uint8Array; height: number; padding: number; payloadSize: number }
  | { kind: "piece_v1"; root: Uint8Array }
  | { kind: "sha256"; digest: Uint8Array }
  | { kind: "opaque" };

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const DECODE = new Map([...ALPHABET].map((c, i) => [c, i]));

export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** Decodes unpadded lowercase base32; null if any character or the trailing bits are invalid. */
export function base32Decode(text: string): Uint8Array | null {
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (const char of text) {
    const digit = DECODE.get(char);
    if (digit === undefined) return null;
    value = ((value << 5) | digit) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out[index++] = (value >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  // Canonical encodings leave no set bits behind and never a whole spare character.
  if (bits >= 5 || (value & ((1 << bits) - 1)) !== 0) return null;
  return out;
}

export function encodeVarint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** Reads an unsigned varint (at most 9 bytes, minimal encoding); null if malformed. */
export function readVarint(
  bytes: Uint8Array,
  offset: number,
): { value: number; next: number } | null {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 9 && offset + i < bytes.length; i++) {
    const byte = bytes[offset + i];
    value += (byte & 0x7f) * scale;
    scale *= 0x80;
    if ((byte & 0x80) === 0) {
      if (i > 0 && byte === 0) return null; // not minimal
      if (!Number.isSafeInteger(value)) return null;
      return { value, next: offset + i + 1 };
    }
  }
  return null;
}

/** Classifies a (lowercased) cid string. */
export function parseCid(cid: string): ParsedCid {
  if (!cid.startsWith("b")) return { kind: "opaque" };
  const bytes = base32Decode(cid.slice(1));
  if (bytes === null) return { kind: "opaque" };
  const version = readVarint(bytes, 0);
  if (!version || version.value !== 1) return { kind: "opaque" };
  const codec = readVarint(bytes, version.next);
  if (!codec) return { kind: "opaque" };
  const hashCode = readVarint(bytes, codec.next);
  if (!hashCode) return { kind: "opaque" };
  const length = readVarint(bytes, hashCode.next);
  if (!length || length.next + length.value !== bytes.length) return { kind: "opaque" };
  const digest = bytes.subarray(length.next);

  if (hashCode.value === PIECE_V2_MULTIHASH && codec.value === RAW_CODEC) {
    const padding = readVarint(digest, 0);
    if (!padding || digest.length !== padding.next + 33) return { kind: "opaque" };
    const height = digest[padding.next];
    const payloadSize = payloadSizeOf(height, padding.value);
    if (payloadSize === null) return { kind: "opaque" };
    return {
      kind: "piece_v2",
      root: digest.slice(padding.next + 1),
      height,
      padding: padding.value,
      payloadSize,
    };
  }
  if (
    hashCode.value === PIECE_V1_MULTIHASH && codec.value === FIL_COMMITMENT_UNSEALED &&
    digest.length === 32
  ) {
    return { kind: "piece_v1", root: digest.slice() };
  }
  if (hashCode.value === SHA2_256_MULTIHASH && codec.value === RAW_CODEC && digest.length === 32) {
    return { kind: "sha256", digest: digest.slice() };
  }
  return { kind: "opaque" };
}

/**
 * The payload size a PieceCIDv2 fixes: 127 * 2^(height-2) - padding. Null when the
 * pair cannot describe any payload (height below 2, padding as large as the tree).
 */
function payloadSizeOf(height: number, padding: number): number | null {
  if (height < 2 || height > 60) return null;
  const unpadded = 127 * 2 ** (height - 2);
  if (!Number.isSafeInteger(unpadded) || padding >= unpadded && !(height === 2)) return null;
  const size = unpadded - padding;
  // Padding is always less than the payload, except that tiny payloads pad up to 127 bytes.
  if (size < 0 || (height > 2 && padding >= size)) return null;
  return size;
}

export function pieceCidV2(root: Uint8Array, height: number, padding: number): string {
  const digest = [...encodeVarint(padding), height, ...root];
  const bytes = [
    1,
    ...encodeVarint(RAW_CODEC),
    ...encodeVarint(PIECE_V2_MULTIHASH),
    ...encodeVarint(digest.length),
    ...digest,
  ];
  return "b" + base32Encode(Uint8Array.from(bytes));
}

export function pieceCidV1(root: Uint8Array): string {
  const bytes = [
    1,
    ...encodeVarint(FIL_COMMITMENT_UNSEALED),
    ...encodeVarint(PIECE_V1_MULTIHASH),
    32,
    ...root,
  ];
  return "b" + base32Encode(Uint8Array.from(bytes));
}

export function sha256Cid(digest: Uint8Array, codec = RAW_CODEC): string {
  const bytes = [1, ...encodeVarint(codec), SHA2_256_MULTIHASH, 32, ...digest];
  return "b" + base32Encode(Uint8Array.from(bytes));
}
