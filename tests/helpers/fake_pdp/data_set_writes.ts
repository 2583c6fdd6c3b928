/**
 * Why: the routes that send a transaction, in Curio's order of checks
 * (filecoin-project/curio: pdp/handlers_create.go, handlers_add.go,
 * handlers.go handleDeleteDataSetPiece). Curio validates the request, then
 * asks the chain for a gas estimate: a wrong signer, a spent nonce or a
 * reused clientDataSetId reverts there and is answered 500 "failed to
 * estimate gas", never 4xx. An add names pieces the node holds (pulled
 * before); the same piece may be added again and gets a new piece id. An add
 * to a data set Curio does not know counts as an offense (see throttle.ts).
 */
import type { Call } from "./chain.ts";
import {
  type FakeCore,
  hexBytes,
  json,
  readJson,
  serverError,
  text,
  ZERO_ADDRESS,
} from "./core.ts";
import { parsePieceCidV2, type PieceInfo } from "./piece.ts";
import { pieceKey } from "./pulls.ts";
import { Revert } from "./typed_data.ts";

const MAX_ADD_PIECES = 40;
const MAX_CREATE_EXTRA_DATA = 4096;
const MAX_DELETE_EXTRA_DATA = 1024;
const MAX_DELETE_PIECES = 200;

interface PieceRequest {
  pieceCid?: unknown;
  subPieces?: { subPieceCid?: unknown }[];
}

/** Curio's transformAddPiecesRequest for the form every client sends: one subPiece, the piece itself. */
function holdPieces(core: FakeCore, pieces: PieceRequest[]): PieceInfo[] | string {
  const out: PieceInfo[] = [];
  const seen = new Set<string>();
  for (const piece of pieces) {
    if (typeof piece.pieceCid !== "string" || piece.pieceCid === "") {
      return "PieceCID is required for each piece";
    }
    const subPieces = piece.subPieces ?? [];
    if (subPieces.length === 0) return "at least one subPiece is required per piece";
    let info: PieceInfo;
    try {
      info = parsePieceCidV2(piece.pieceCid);
      for (const sub of subPieces) {
        const subInfo = parsePieceCidV2(String(sub.subPieceCid ?? ""));
        if (seen.has(subInfo.v1)) return "duplicate subPieceCid in request";
        seen.add(subInfo.v1);
        if (!core.worker.parked.has(pieceKey(subInfo))) {
          return `failed to validate subPieces: subPiece CID ${subInfo.v1} not found or does not belong to service public`;
        }
        if (subPieces.length > 1 || subInfo.v1 !== info.v1) {
          return "failed to validate subPieces: the fake provider models no aggregate of subPieces";
        }
      }
    } catch (error) {
      return `invalid SubPiece: ${(error as Error).message}`;
    }
    out.push(info);
  }
  return out;
}

async function send(core: FakeCore, call: Call, route: string) {
  try {
    return await core.chain.send(call, route);
  } catch (error) {
    if (!(error instanceof Revert)) throw error;
    return serverError(
      500,
      `Failed to send transaction: failed to estimate gas: message execution failed (exit=[33], revert reason=[${error.message}])`,
    );
  }
}

function recordKeeperRefusal(core: FakeCore, recordKeeper: unknown): Response | null {
  if (typeof recordKeeper !== "string" || recordKeeper === "") {
    return serverError(400, "recordKeeper address is required");
  }
  if (ZERO_ADDRESS.test(recordKeeper) || !/^(0x)?[0-9a-fA-F]{40}$/.test(recordKeeper)) {
    return serverError(400, "Invalid recordKeeper address");
  }
  if (recordKeeper.toLowerCase() !== core.options.recordKeeper.toLowerCase()) {
    return serverError(403, "recordKeeper address not allowed for public service");
  }
  return null;
}

/** extraData as the chain receives it: 0x-hex ("0x" when absent). */
function extraDataOf(value: unknown): { hex: string; size: number } | null {
  if (value === undefined || value === null) return { hex: "0x", size: 0 };
  const bytes = typeof value === "string" ? hexBytes(value) : null;
  if (bytes === null) return null;
  return { hex: "0x" + String(value).replace(/^0x/, ""), size: bytes.length };
}

/** POST /pdp/data-sets and POST /pdp/data-sets/create-and-add. */
export async function handleCreate(
  core: FakeCore,
  request: Request,
  withPieces: boolean,
): Promise<Response> {
  const body = await readJson(request);
  if (body === null) return serverError(400, "Invalid JSON in request body");
  const refusal = recordKeeperRefusal(core, body.recordKeeper);
  if (refusal) return refusal;
  let pieces: PieceInfo[] | null = null;
  if (withPieces) {
    const requested = Array.isArray(body.pieces) ? body.pieces as PieceRequest[] : [];
    if (requested.length === 0) return serverError(400, "At least one piece must be provided");
    if (requested.length > MAX_ADD_PIECES) {
      return serverError(400, `piece count (${requested.length}) exceeds the maximum allowed`);
    }
    const held = holdPieces(core, requested);
    if (typeof held === "string") return serverError(400, `Failed to process request: ${held}`);
    pieces = held;
  }
  const extraData = extraDataOf(body.extraData);
  if (extraData === null) return serverError(400, "Invalid extraData format (must be hex encoded)");
  if (!withPieces && extraData.size > MAX_CREATE_EXTRA_DATA) {
    return serverError(400, `extraData size (${extraData.size} bytes) exceeds the maximum allowed`);
  }
  const call: Call = pieces
    ? { kind: "createAndAdd", pieces, extraData: extraData.hex }
    : { kind: "create", extraData: extraData.hex };
  const route = withPieces ? "POST /pdp/data-sets/create-and-add" : "POST /pdp/data-sets";
  const tx = await send(core, call, route);
  if (tx instanceof Response) return tx;
  core.records.recordCreate(tx, pieces);
  return new Response(null, {
    status: 201,
    headers: { location: `/pdp/data-sets/created/${tx.hash}` },
  });
}

/** POST /pdp/data-sets/{id}/pieces */
export async function handleAdd(
  core: FakeCore,
  request: Request,
  idText: string,
  clientIp: string,
): Promise<Response> {
  const dataSetId = Number(idText);
  if (!/^\d+$/.test(idText)) return serverError(400, "Invalid data set ID format");
  const body = await readJson(request);
  if (body === null) return serverError(400, "Invalid request body");
  const requested = Array.isArray(body.pieces) ? body.pieces as PieceRequest[] : [];
  if (requested.length === 0) return serverError(400, "At least one piece must be provided");
  if (requested.length > MAX_ADD_PIECES) {
    return serverError(400, `piece count (${requested.length}) exceeds the maximum allowed`);
  }
  if (!core.records.dataSets.has(dataSetId)) {
    const blocked = core.throttle.record(clientIp);
    if (blocked) {
      return text(429, blocked.reason, { "retry-after": String(blocked.retryAfterSeconds) });
    }
    return serverError(404, "Data set not found");
  }
  const extraData = extraDataOf(body.extraData);
  if (extraData === null) return serverError(400, "Invalid extraData format (must be hex encoded)");
  const pieces = holdPieces(core, requested);
  if (typeof pieces === "string") return serverError(400, `Failed to process request: ${pieces}`);
  const call: Call = { kind: "add", dataSetId, pieces, extraData: extraData.hex };
  const tx = await send(core, call, `POST /pdp/data-sets/${dataSetId}/pieces`);
  if (tx instanceof Response) return tx;
  core.records.recordAdd(tx, dataSetId, pieces);
  // The transaction is on its way whatever becomes of this answer (a client killed meanwhile).
  await core.addAnswers?.promise;
  const location = `/pdp/data-sets/${idText}/pieces/added/${tx.hash}`;
  return new Response(null, { status: 201, headers: { location } });
}

/** DELETE /pdp/data-sets/{id}/pieces/{pieceId} */
export async function handleDelete(
  core: FakeCore,
  request: Request,
  idText: string,
  pieceIdText: string,
): Promise<Response> {
  if (!/^\d+$/.test(idText)) return text(400, "Invalid data set ID format");
  if (!/^\d+$/.test(pieceIdText)) return text(400, "Invalid piece ID format");
  const dataSet = core.records.dataSets.get(Number(idText));
  if (!dataSet) return text(404, "Data set not found");
  const raw = await request.text();
  let body: Record<string, unknown> = {};
  try {
    if (raw.trim() !== "") body = JSON.parse(raw);
  } catch {
    return text(400, "Invalid request body");
  }
  const extraData = extraDataOf(body.extraData);
  if (extraData === null) return text(400, "Invalid extraData format (must be hex encoded)");
  if (extraData.size > MAX_DELETE_EXTRA_DATA) {
    return text(400, `extraData size (${extraData.size} bytes) exceeds the maximum allowed`);
  }
  const listed = Array.isArray(body.pieceIds) && body.pieceIds.length > 0
    ? body.pieceIds.map(Number)
    : [Number(pieceIdText)];
  const pieceIds = [...new Set(listed)];
  if (pieceIds.length > MAX_DELETE_PIECES) return text(400, "piece count exceeds the maximum");
  if (pieceIds.some((id) => !dataSet.pieces.has(id))) {
    return text(404, "One or more piece not found");
  }
  const call: Call = { kind: "remove", dataSetId: dataSet.id, pieceIds, extraData: extraData.hex };
  const tx = await send(core, call, `DELETE /pdp/data-sets/${dataSet.id}/pieces`);
  if (tx instanceof Response) return tx;
  core.records.recordRemoval(tx, dataSet.id, pieceIds);
  return json({ txHash: tx.hash });
}
