/**
 * The SDK's side of the manifest of a split file. The format itself (fields,
 * serialisation, parsing) is defined once in src/kernel/manifest_format.ts, which the
 * server uses too; here, a manifest that fails to parse is a VerificationError
 * of the cid it came under, and the names and size bound an upload needs.
 */
import { ManifestFormatError, readManifest } from "../../kernel/manifest_format.ts";
import { VerificationError } from "./errors.ts";
import type { Manifest } from "./types.ts";

export {
  isManifestType,
  MANIFEST_FORMAT,
  MANIFEST_PREFIX,
  MANIFEST_VERSION,
  MAX_MANIFEST_BYTES,
  MAX_MANIFEST_PIECES,
  serializeManifest,
} from "../../kernel/manifest_format.ts";

/** X-Filename is at most 255 bytes of UTF-8 (docs/api.md#limits). */
const MAX_FILENAME_BYTES = 255;

/**
 * An upper bound of the serialised size for `pieceCount` pieces, to refuse a
 * split whose manifest could not be stored under the per-file cap before any
 * piece is sent.
 */
export function manifestSizeBound(pieceCount: number, name: string | null, type: string): number {
  const text = (value: string | null) => value === null ? 4 : 6 * value.length + 2;
  // {"cid":"<80>","size":<16 digits>}, plus a comma.
  const perPiece = 8 + 80 + 9 + 16 + 2;
  return 200 + text(name) + text(type) + pieceCount * perPiece;
}

/** Parses and checks manifest bytes; anything wrong is VerificationError("manifest"). */
export function parseManifest(bytes: Uint8Array, cid: string): Manifest {
  try {
    return readManifest(bytes);
  } catch (error) {
    if (!(error instanceof ManifestFormatError)) throw error;
    throw new VerificationError(cid, "manifest", `The manifest ${cid} is invalid: ${error.reason}`);
  }
}

/**
 * X-Filename of piece `index` (from 0) of `total`: "<name>.part<k>" with k
 * from 1, zero-padded to the width of `total` so the names sort in order
 * ("video.mp4.part01" … "video.mp4.part12"). Null without a name.
 */
export function pieceFilename(name: string | null, index: number, total: number): string | null {
  if (name === null) return null;
  const width = String(total).length;
  return withSuffix(name, `.part${String(index + 1).padStart(width, "0")}`);
}

/** X-Filename of the manifest piece: "<name>.manifest.json". Null without a name. */
export function manifestFilename(name: string | null): string | null {
  return name === null ? null : withSuffix(name, ".manifest.json");
}

/** name + suffix, the name shortened (whole code points) so the result fits X-Filename. */
function withSuffix(name: string, suffix: string): string {
  const encoder = new TextEncoder();
  const room = MAX_FILENAME_BYTES - encoder.encode(suffix).byteLength;
  let kept = "";
  let bytes = 0;
  for (const char of name) {
    const length = encoder.encode(char).byteLength;
    if (bytes + length > room) break;
    kept += char;
    bytes += length;
  }
  return kept + suffix;
}
