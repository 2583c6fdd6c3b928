/**
 * GET and HEAD /piece/{pieceCid} — the IPFS piece gateway
 * (ipfs/specs/src/http-gateways/piece-gateway.md): the URL a Filecoin storage provider
 * pulls a staged piece from (Curio's piece pull wants a sourceUrl ending in
 * /piece/{pieceCid}).
 *
 * A piece is found by its PieceCIDv2 or its PieceCIDv1, whatever cid it was
 * stored under: first a piece stored under the cid asked for, then one whose
 * recorded piece cids name it (every piece records its v2 and v1: at upload
 * when its cid fixes them, else once the background pass has read it back,
 * catalog/digests.ts; until then its v2 is 404 here), and, for a v2, one
 * stored under the v1 of the same root with the size the v2 fixes (a piece
 * stored before the v2 was recorded, until the pass reaches it). Ranges are
 * served as on /p/. The spec's recommendations are followed:
 * `application/octet-stream`, `Content-Disposition: attachment` named by the
 * cid asked for, `Cache-Control: public, max-age=29030400, immutable`, a
 * quoted ETag (the cid asked for), nosniff.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";
import { normalizeCid } from "../../kernel/cid_format.ts";
import { parseCid, pieceCidV1 } from "../../kernel/piece_cid/cid_codec.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { answerPiece } from "./piece_answer.ts";
import { servablePiece } from "./stored_piece.ts";
import type { RetrievalDeps } from "./stored_piece.ts";
import { bytesHeaders } from "./bytes_headers.ts";

export const PIECE_GATEWAY_PATH = "/piece/:pieceCid";

/** The spec's cache lifetime for immutable pieces (48 weeks). */
const PIECE_CACHE_CONTROL = "public, max-age=29030400, immutable";

export async function answerPieceGateway(
  request: Request,
  context: RequestContext,
  deps: RetrievalDeps,
): Promise<Response> {
  const asked = normalizeCid(context.params.pieceCid);
  const parsed = asked === null ? null : parseCid(asked);
  if (
    asked === null || parsed === null || (parsed.kind !== "piece_v2" && parsed.kind !== "piece_v1")
  ) {
    throw new ApiError("invalid_cid", "The piece gateway takes a PieceCIDv2 or PieceCIDv1");
  }
  let [stored, row] = [asked, await deps.catalog.getPiece(asked)];
  if (row === null || !servable(row)) {
    // Another name of the same bytes may still be served.
    const named = await deps.catalog.findPieceByPieceCid(asked);
    if (named !== null && (row === null || servable(named))) [stored, row] = [named.cid, named];
  }
  if (parsed.kind === "piece_v2" && row === null) {
    // Stored under the v1 of the same root, with the size this v2 fixes: the same bytes.
    const v1 = pieceCidV1(parsed.root);
    const underV1 = await deps.catalog.getPiece(v1);
    if (underV1?.size === parsed.payloadSize) [stored, row] = [v1, underV1];
  }
  const piece = await servablePiece(deps, stored, row);
  const cached = request.method === "GET" ? deps.cache.get(piece.cid) : undefined;
  return await answerPiece(request, context, deps, {
    piece,
    headers: gatewayHeaders(asked, piece, deps.store.source),
    etag: `"${asked}"`,
    offload: true,
    bytes: await cached?.bytes(),
  });
}

function servable(row: PieceRecord): boolean {
  return row.removedAt === null && row.corruptAt === null;
}

function gatewayHeaders(asked: string, piece: PieceRecord, source: string): Headers {
  return bytesHeaders({
    contentType: "application/octet-stream",
    size: piece.size,
    contentDisposition: `attachment; filename="${asked}"`,
    cacheControl: PIECE_CACHE_CONTROL,
    etag: `"${asked}"`,
    pieceCid: piece.cid,
    source,
  });
}
