/** What a server's data directory holds: committed pieces and upload temp files. */
import { listFiles } from "./files.ts";

/** Committed piece files under <dataDir>/pieces (shard paths), temp files excluded. */
export async function storedPieces(dataDir: string): Promise<string[]> {
  return (await listFiles(`${dataDir}/pieces`)).filter((f) => !f.startsWith("tmp/"));
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
