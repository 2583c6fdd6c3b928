/**
 * Retrieval's one home: the handlers of GET (and so HEAD) /p/{cid},
 * /f/{cid} and /piece/{pieceCid} (and /api/pieces/{cid}, whether /p/ serves
 * a cid), the pipeline's fast path for cached
 * pieces, and the hook that evicts a piece whose bytes failed verification.
 * All three routes go through the same lookup (stored_piece.ts) and the same
 * conditional answer (conditional_answer.ts: 304, 206, 416 or 200), and, for
 * one piece, the same way to its bytes (piece_answer.ts).
 */
import type { Handler } from "../pipeline/router.ts";
import { answerFileRoute } from "./files.ts";
import { ManifestCache } from "./manifest_cache.ts";
import { answerPieceGateway } from "./piece_gateway.ts";
import { answerPieceRoute, cidParam, fastPathOf } from "./pieces.ts";
import { answerPieceStatus } from "./piece_status.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

export { FILE_PATH } from "./files.ts";
export { PIECE_GATEWAY_PATH } from "./piece_gateway.ts";
export { RETRIEVAL_PATH } from "./pieces.ts";
export { PIECE_STATUS_PATH } from "./piece_status.ts";
export {
  getFileDoc,
  getGatewayPieceDoc,
  getPieceDoc,
  getPieceStatusDoc,
} from "../docs/retrieval_docs.ts";
export type { PieceOffload } from "./offload.ts";
export type { RetrievalDeps } from "./stored_piece.ts";
export { SmallPieceCache } from "./small_piece_cache.ts";

export interface Retrieval {
  /** GET /p/:cid. */
  pieces: Handler;
  /** GET /f/:cid. */
  files: Handler;
  /** GET /piece/:pieceCid. */
  pieceGateway: Handler;
  /** GET /api/pieces/:cid: whether /p/ serves it, as 200 yes or no (never a 404 to log). */
  status: Handler;
  /** A 200 for a plain GET of a cached piece, or null to let the pipeline and handler decide. */
  fastPath(request: Request): Response | null;
  /** Evicts cid from the cache: its stored bytes failed verification. */
  distrust(cid: string): void;
}

export function createRetrieval(deps: RetrievalDeps): Retrieval {
  const manifests = new ManifestCache();
  return {
    pieces: (request, context) =>
      answerPieceRoute(request, context, deps, { cid: cidParam(context), offload: true }),
    files: (request, context) => answerFileRoute(request, context, deps, manifests),
    pieceGateway: (request, context) => answerPieceGateway(request, context, deps),
    status: (_request, context) => answerPieceStatus(context, deps),
    fastPath: fastPathOf(deps),
    distrust: (cid) => {
      deps.cache.delete(cid.toLowerCase());
      manifests.forget(cid.toLowerCase());
    },
  };
}
