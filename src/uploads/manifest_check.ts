/**
 * The upload of a manifest (Content-Type application/vnd.storage-manifest+json)
 * is accepted only when GET /f/ can serve the file it describes: its bytes
 * parse as a manifest (else 400 invalid_manifest) and every piece it lists is
 * stored with the listed size (else 400 manifest_incomplete). Nothing is
 * stored either way: the checks run on the staged bytes, before the commit.
 *
 * The bytes are kept as they stream in (a manifest is small: at most
 * MAX_MANIFEST_BYTES, refused from Content-Length before a byte is read).
 */
import { ApiError } from "../kernel/errors.ts";
import {
  isManifestType,
  ManifestFormatError,
  MAX_MANIFEST_BYTES,
  readManifestInSlices,
} from "../kernel/manifest_format.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import { requireContentType } from "./type_and_name.ts";

export interface ManifestCollector {
  /** Sees each chunk of the body (a copy is kept). */
  onChunk(chunk: Uint8Array): void;
  /** Throws invalid_manifest or manifest_incomplete unless the manifest can be served. */
  check(catalog: PieceCatalog): Promise<void>;
}

/** 400 invalid_manifest for a body declared a manifest and longer than one may be. */
export function checkManifestSize(contentType: string, length: number): void {
  if (isManifestType(contentType) && length > MAX_MANIFEST_BYTES) {
    throw new ApiError(
      "invalid_manifest",
      `A manifest is at most ${MAX_MANIFEST_BYTES} bytes; this one is ${length}`,
    );
  }
}

/** A collector for a manifest upload; null when the body is not declared a manifest. */
export function manifestCollectorFor(
  contentType: string,
  length: number,
): ManifestCollector | null {
  checkManifestSize(contentType, length);
  if (!isManifestType(contentType)) return null;
  const bytes = new Uint8Array(length);
  let received = 0;
  return {
    onChunk(chunk) {
      bytes.set(chunk.subarray(0, length - received), received);
      received += chunk.byteLength;
    },
    async check(catalog) {
      let manifest;
      try {
        manifest = await readManifestInSlices(bytes.subarray(0, received));
      } catch (error) {
        if (!(error instanceof ManifestFormatError)) throw error;
        throw new ApiError("invalid_manifest", `The body is ${error.message}; nothing was stored`);
      }
      if (!isServableType(manifest.contentType)) {
        throw new ApiError(
          "invalid_manifest",
          "The manifest's contentType is not a media type like video/mp4; nothing was stored",
        );
      }
      for (const [index, listed] of manifest.pieces.entries()) {
        const stored = await catalog.getPiece(listed.cid);
        // A piece a sweep removed is not stored: its bytes must be uploaded again.
        if (stored === null || stored.removedAt !== null || stored.size !== listed.size) {
          const found = stored === null || stored.removedAt !== null
            ? "nothing is stored"
            : `${stored.size} bytes are stored`;
          throw new ApiError(
            "manifest_incomplete",
            `Piece ${index} of the manifest, ${listed.cid}, is listed as ${listed.size} bytes ` +
              `but ${found} under it; upload every piece first. Nothing was stored`,
          );
        }
      }
    },
  };
}

/** Whether a manifest's contentType may be sent as GET /f/'s Content-Type (as an upload's may). */
export function isServableType(contentType: string): boolean {
  try {
    requireContentType(contentType);
    return true;
  } catch {
    return false;
  }
}
