/** What a server's data directory holds: committed pieces and upload temp files. */
import { listFiles } from "./files.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";

/** Committed piece files under <dataDir>/pieces (shard paths), temp and partial files excluded. */
export async function storedPieces(dataDir: string): Promise<string[]> {
  return (await listFiles(`${dataDir}/pieces`))
    .filter((f) => !f.startsWith("tmp/") && !f.startsWith("partial/"));
}

/** Files in <dataDir>/pieces/partial: resumable uploads' bytes (one per upload). */
export async function partialFiles(dataDir: string): Promise<string[]> {
  return await listFiles(`${dataDir}/pieces/partial`);
}

/** Files in <dataDir>/pieces/tmp: uploads being staged, or their leftovers. */
export async function tempFiles(dataDir: string): Promise<string[]> {
  return await listFiles(`${dataDir}/pieces/tmp`);
}

/** Sizes of the files in <dataDir>/pieces/tmp. */
export async function tempFileSizes(dataDir: string): Promise<number[]> {
  const sizes: number[] = [];
  for (const name of await tempFiles(dataDir)) {
    const info = await Deno.stat(`${dataDir}/pieces/tmp/${name}`).catch(() => null);
    if (info) sizes.push(info.size);
  }
  return sizes;
}

/** Where the disk driver keeps a committed piece (its shard path). */
export function pieceFile(dataDir: string, cid: string): string {
  return `${dataDir}/pieces/${shardOf(cid)}/${cid}`;
}

/** Bit rot: one byte of a stored file changes in place (same file, same size). */
export async function flipByte(path: string, offset: number): Promise<void> {
  using file = await Deno.open(path, { read: true, write: true });
  const byte = new Uint8Array(1);
  await file.seek(offset, Deno.SeekMode.Start);
  await file.read(byte);
  byte[0] ^= 0xff;
  await file.seek(offset, Deno.SeekMode.Start);
  await file.write(byte);
}
