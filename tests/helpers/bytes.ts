/** Sizes and digests the tests share. */

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
