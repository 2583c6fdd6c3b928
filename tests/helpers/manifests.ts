/**
 * A split file's manifest as a client makes one (format storage-manifest,
 * version 1): each part's cid and size, the whole file's size and SHA-256.
 * For tests that store a split file piece by piece; tests of bad manifests
 * spell theirs out.
 */
import { sha256Hex } from "./bytes.ts";
import { serializeManifest } from "../../src/kernel/manifest_format.ts";

/** The manifest bytes of a file `name` (application/octet-stream) made of `parts`, in order. */
export async function manifestOf(
  name: string,
  parts: { cid: string; bytes: Uint8Array<ArrayBuffer> }[],
): Promise<Uint8Array<ArrayBuffer>> {
  const whole = new Uint8Array(parts.reduce((n, part) => n + part.bytes.length, 0));
  let offset = 0;
  for (const part of parts) {
    whole.set(part.bytes, offset);
    offset += part.bytes.length;
  }
  return serializeManifest({
    format: "storage-manifest",
    version: 1,
    name,
    contentType: "application/octet-stream",
    size: whole.length,
    sha256: await sha256Hex(whole),
    pieces: parts.map((part) => ({ cid: part.cid, size: part.bytes.length })),
  });
}
