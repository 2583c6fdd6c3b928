/** Sizes, digests and test bytes the tests share. */
import { seededRandom } from "../../scripts/lib/random.ts";

export const KIB = 1024;
export const MIB = 1024 * KIB;

/** SHA-256 of bytes (Web Crypto). */
export async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** Lowercase hex SHA-256 of bytes. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return (await sha256(bytes)).toHex();
}

/** Bytes that look random but are the same for the same seed (mulberry32). */
export function seededBytes(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const random = seededRandom(seed);
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(random() * 256);
  return out;
}
