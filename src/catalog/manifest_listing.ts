/**
 * What a stored manifest lists, read back from the store: the pieces its
 * deal keeps (catalog.ts records it with the deal; a sweep reads manifests
 * uploaded before listings were kept). Bytes that are not a manifest this
 * service can read list nothing, and so keep nothing but themselves.
 */
import {
  ManifestFormatError,
  MAX_MANIFEST_BYTES,
  readManifestInSlices,
} from "../kernel/manifest_format.ts";
import type { PieceStore } from "../driver/driver.ts";

/** The cids the manifest stored under cid lists; none when it cannot be read as one. */
export async function manifestListingOf(store: PieceStore, cid: string): Promise<string[]> {
  const opened = await store.open(cid);
  if (opened === null) return [];
  if (opened.size > MAX_MANIFEST_BYTES) {
    await opened.body.cancel();
    return [];
  }
  const bytes = new Uint8Array(await new Response(opened.body).arrayBuffer());
  try {
    return (await readManifestInSlices(bytes)).pieces.map((piece) => piece.cid);
  } catch (error) {
    if (error instanceof ManifestFormatError) return [];
    throw error;
  }
}
