/**
 * Why: Curio reads every pieceCid as a PieceCIDv2, keeps the v1 (CommP) and
 * the raw size apart (its tables key pieces by the v1 string, which is why a
 * pull answer lists pieces in v1 order), signs and sends the v2 bytes on
 * chain, and recomputes CommP from the bytes it pulls. This module does the
 * same with the repository's own hasher (src/kernel/piece_cid), so the fake
 * checks pieces by the same arithmetic as the service it tests.
 */
import {
  parseCid,
  pieceCidOfStream,
  pieceCidV1,
  pieceCidV2,
} from "../../../src/kernel/piece_cid/mod.ts";
import { base32Decode } from "../../../src/kernel/piece_cid/cid_codec.ts";
import { type Hex, toHex } from "viem";

/** Curio's PieceSizeMinLimit: 128 padded bytes, unpadded. */
export const PIECE_SIZE_MIN = 127;

export interface PieceInfo {
  /** The PieceCIDv2 string (bafkzcib…). */
  v2: string;
  /** The PieceCIDv1 string (baga6ea4seaq…): Curio's key. */
  v1: string;
  rawSize: number;
  /** The v2 CID's bytes, hex: what AddPieces signs and PDPVerifier stores. */
  bytesHex: Hex;
}

/** Reads a PieceCIDv2; throws, with Curio's wording, on anything else. */
export function parsePieceCidV2(cid: string): PieceInfo {
  const parsed = parseCid(cid);
  if (parsed.kind !== "piece_v2") throw new Error(`invalid PieceCIDv2: ${cid}`);
  const v2 = pieceCidV2(parsed.root, parsed.height, parsed.padding);
  const bytes = base32Decode(v2.slice(1));
  if (bytes === null) throw new Error(`invalid PieceCIDv2: ${cid}`);
  return { v2, v1: pieceCidV1(parsed.root), rawSize: parsed.payloadSize, bytesHex: toHex(bytes) };
}

/** The PieceCIDv2 of bytes, as the pull task recomputes it after a download. */
export async function pieceCidOfBytes(bytes: Uint8Array): Promise<string> {
  const { cid } = await pieceCidOfStream(ReadableStream.from([bytes]));
  return cid;
}

/** Orders as Curio's `ORDER BY piece_cid` on v1 strings does (byte order of ASCII). */
export function compareV1(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
