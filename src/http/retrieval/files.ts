/**
 * GET and HEAD /f/{cid} — one URL for a whole file, however it was stored.
 *
 * When the cid is a manifest (stored with the manifest Content-Type, and its
 * bytes parse as one), the answer is the file it describes: the manifest's
 * type, name and total length, `ETag: "<cid>.file"`, and ranges that may
 * cross piece boundaries (file_stream.ts opens only the pieces a range
 * touches). Any other stored cid answers exactly as /p/ does, so a client can
 * hand out /f/ links for everything. The bytes always come through the
 * service, never through nginx's offload: they span several files. A
 * manifest is read and parsed once, then kept (manifest_cache.ts).
 */
import type { PieceRecord } from "../../domain/catalog_records.ts";
import type { Logger } from "../../kernel/log.ts";
import {
  isManifestType,
  ManifestFormatError,
  MAX_MANIFEST_BYTES,
  readManifestInSlices,
} from "../../kernel/manifest_format.ts";
import type { Manifest } from "../../kernel/manifest_format.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { isServableType } from "../../uploads/manifest_check.ts";
import { bytesHeaders } from "./bytes_headers.ts";
import { decideAnswer, notModified, rangeOf, setRangeHeaders } from "./conditional_answer.ts";
import { contentDisposition } from "./content_disposition.ts";
import { fileStream, openPart, partsOf } from "./file_stream.ts";
import { answerPieceRoute, cidParam } from "./pieces.ts";
import { findServablePiece, wholePiece } from "./stored_piece.ts";
import type { ManifestCache } from "./manifest_cache.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

export const FILE_PATH = "/f/:cid";

export async function answerFileRoute(
  request: Request,
  context: RequestContext,
  deps: RetrievalDeps,
  manifests: ManifestCache,
): Promise<Response> {
  const cid = cidParam(context);
  const cached = deps.cache.get(cid);
  const contentType = cached
    ? cached.headers.find(([name]) => name === "content-type")?.[1] ?? null
    : null;
  if (cached && !isManifestType(contentType)) {
    return await answerPieceRoute(request, context, deps, { cid, offload: false });
  }
  const piece = await findServablePiece(deps, cid);
  const manifest = isManifestType(piece.contentType)
    ? await manifests.get(piece, async () => manifestOf(deps, piece, await cached?.bytes()))
    : null;
  if (manifest === null) {
    return await answerPieceRoute(request, context, deps, { cid, offload: false, piece });
  }
  return await answerManifest(request, context, deps, { cid, manifest });
}

/** The file a manifest describes: its pieces' bytes, in order, as one answer. */
async function answerManifest(
  request: Request,
  context: RequestContext,
  deps: RetrievalDeps,
  file: { cid: string; manifest: Manifest },
): Promise<Response> {
  const { cid, manifest } = file;
  const headers = fileHeaders(cid, manifest, deps.store.source);
  const answer = decideAnswer(request, context, { etag: `"${cid}.file"`, size: manifest.size });
  if (answer.status === 304) return notModified(headers);
  setRangeHeaders(headers, answer);
  const { status } = answer;
  if (request.method === "HEAD") return new Response(null, { status, headers });
  const range = rangeOf(answer, manifest.size);
  const parts = partsOf(manifest, range);
  // Opened before the head is sent, so a file whose first piece is unavailable gets a status.
  const first = await openPart(deps, parts[0]);
  context.logFields.bytesOut = range.length;
  context.logFields.pieces = parts.length;
  const body = fileStream({
    deps,
    parts,
    first,
    onAbort: (error, part) => {
      logAbort(deps.logger, { cid, piece: part.cid, error });
      deps.onStreamAborted?.(FILE_PATH);
    },
  });
  return new Response(body, { status, headers });
}

/** The manifest behind a manifest-typed piece; null when its bytes are not one. */
async function manifestOf(
  deps: RetrievalDeps,
  piece: PieceRecord,
  cachedBytes: Uint8Array<ArrayBuffer> | undefined,
): Promise<Manifest | null> {
  if (piece.size > MAX_MANIFEST_BYTES) return null;
  const bytes = await wholePiece(deps, piece, cachedBytes);
  try {
    return await readManifestInSlices(bytes);
  } catch (error) {
    // Stored before uploads were checked, perhaps: then it is served as the bytes it is.
    if (error instanceof ManifestFormatError) return null;
    throw error;
  }
}

function fileHeaders(cid: string, manifest: Manifest, source: string): Headers {
  return bytesHeaders({
    // Checked at upload; a manifest stored before that was checked is served as bytes.
    contentType: isServableType(manifest.contentType)
      ? manifest.contentType
      : "application/octet-stream",
    size: manifest.size,
    contentDisposition: contentDisposition(manifest.name),
    etag: `"${cid}.file"`,
    pieceCid: cid,
    source,
  });
}

function logAbort(logger: Logger, fields: { cid: string; piece: string; error: unknown }): void {
  logger.error("split file answer cut off: a piece failed mid-stream", {
    cid: fields.cid,
    piece: fields.piece,
    error: fields.error instanceof Error ? fields.error.message : String(fields.error),
  });
}
