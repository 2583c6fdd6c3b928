/**
 * Why: the routes a client polls, answering exactly Curio's JSON
 * (filecoin-project/curio: pdp/handlers.go handleGetDataSetCreationStatus,
 * handleGetPieceAdditionStatus, handleGetDataSet, handleGetDataSetPiece).
 * Three stages: pending (txStatus "pending", ok / addMessageOk null), landed
 * but not yet recorded (txStatus "confirmed", ok true, `confirmedTxHash`,
 * still `dataSetCreated` / `piecesAdded` false), recorded (`dataSetId`, or
 * `confirmedPieceIds`). A data set lists its pieces minus those removed on
 * chain; the single-piece route still shows a removed one, with v1 CIDs, as
 * Curio's does.
 */
import type { Hex } from "viem";
import { type FakeCore, json, SERVICE, text } from "./core.ts";

/** Curio's txHash clean-up: 0x-prefixed, lowercase, 32 bytes of hex; null if not. */
function txHashOf(value: string): Hex | null {
  const hash = (value.startsWith("0x") ? value : "0x" + value).toLowerCase();
  return /^0x[0-9a-f]{64}$/.test(hash) ? hash as Hex : null;
}

/** GET /pdp/data-sets/created/{txHash} */
export function handleCreationStatus(core: FakeCore, hashText: string): Response {
  const hash = txHashOf(hashText);
  if (hash === null) return text(400, "Invalid txHash length");
  const create = core.records.creates.get(hash);
  if (!create) return text(404, "Data set creation not found for given txHash");
  const landed = create.tx.landedAt !== undefined;
  return json({
    createMessageHash: hash,
    dataSetCreated: create.created,
    service: SERVICE,
    txStatus: landed ? "confirmed" : "pending",
    ok: landed ? create.tx.success : null,
    ...(create.created ? { dataSetId: create.dataSetId } : {}),
    ...(landed ? { confirmedTxHash: hash } : {}),
  });
}

/** GET /pdp/data-sets/{id}/pieces/added/{txHash} */
export function handleAddStatus(core: FakeCore, idText: string, hashText: string): Response {
  if (!/^\d+$/.test(idText)) return text(400, "Invalid data set ID format");
  const hash = txHashOf(hashText);
  if (hash === null) return text(400, "Invalid txHash length");
  const dataSetId = Number(idText);
  if (!core.records.dataSets.has(dataSetId)) return text(404, "Data set not found");
  const add = core.records.adds.get(hash);
  if (!add || add.dataSetId !== dataSetId) {
    return text(404, "Piece addition not found for given transaction");
  }
  const landed = add.tx.landedAt !== undefined;
  const confirmedPieceIds = landed && add.tx.success && add.added ? add.pieceIds : undefined;
  return json({
    txHash: hash,
    txStatus: landed ? "confirmed" : "pending",
    dataSetId,
    pieceCount: new Set(add.pieces.map((piece) => piece.v1)).size,
    addMessageOk: landed ? add.tx.success : null,
    piecesAdded: add.added,
    ...(confirmedPieceIds ? { confirmedPieceIds } : {}),
    ...(landed ? { confirmedTxHash: hash } : {}),
  });
}

/** GET /pdp/data-sets/{id} */
export function handleGetDataSet(core: FakeCore, idText: string): Response {
  if (!/^\d+$/.test(idText)) return text(400, "Invalid data set ID format");
  const dataSet = core.records.dataSets.get(Number(idText));
  if (!dataSet) return text(404, "Data set not found");
  const pieces = [...dataSet.pieces.values()]
    .filter((row) => !row.removed)
    .sort((a, b) => a.pieceId - b.pieceId)
    .map((row) => ({
      pieceId: row.pieceId,
      pieceCid: row.piece.v2,
      subPieceCid: row.piece.v2,
      subPieceOffset: 0,
    }));
  return json({ id: dataSet.id, pieces, nextChallengeEpoch: 0 });
}

/** GET /pdp/data-sets/{id}/pieces/{pieceId} */
export function handleGetPiece(core: FakeCore, idText: string, pieceIdText: string): Response {
  if (!/^\d+$/.test(idText)) return text(400, "Invalid data set ID format");
  if (!/^\d+$/.test(pieceIdText)) return text(400, "Invalid piece ID format");
  const row = core.records.dataSets.get(Number(idText))?.pieces.get(Number(pieceIdText));
  if (!row) return text(404, "Piece not found");
  return json({
    pieceId: row.pieceId,
    pieceCid: row.piece.v1,
    subPieces: [{ subPieceCid: row.piece.v1, subPieceOffset: 0 }],
  });
}
