/**
 * GET /api/pieces/{cid}: is this piece stored, yes or no, always as 200 JSON.
 * The same lookup as GET /p/ (stored_piece.ts), answered as a fact rather
 * than as the bytes: clients ask it before they send a piece ("already
 * stored? then only make a deal"), and a browser logs every 404 of HEAD /p/
 * as a failed load, which a yes/no answer never is. A piece removed by a
 * sweep or marked corrupt is not stored; storage that cannot be asked is 503
 * as for any retrieval.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { PieceStatus } from "../../kernel/wire.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { cidParam } from "./pieces.ts";
import { findServablePiece } from "./stored_piece.ts";
import type { RetrievalDeps } from "./stored_piece.ts";

export const PIECE_STATUS_PATH = "/api/pieces/:cid";

export async function answerPieceStatus(
  context: RequestContext,
  deps: RetrievalDeps,
): Promise<Response> {
  const cid = cidParam(context);
  let stored = true;
  try {
    await findServablePiece(deps, cid);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 503) throw error;
    stored = false; // not found, gone, corrupt: GET /p/ would not serve it
  }
  const status: PieceStatus = { cid, stored };
  return jsonResponse(200, status, { "cache-control": "no-store" });
}
