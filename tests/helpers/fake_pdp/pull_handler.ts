/**
 * Why: POST /pdp/piece/pull in Curio's order of checks (filecoin-project/curio:
 * pdp/handlers_pull.go, PullRequest.Validate in pdp/pull_types.go): shape
 * (extraData required, recordKeeper required without a data set, 1 to 40
 * pieces, no repeated piece+source, https sources), the record keeper allowed
 * (403), the idempotency key looked up before anything else is checked again,
 * the data set known (404), the payer read from extraData or the data set,
 * the pieces parsed as PieceCIDv2 of at least 127 bytes, then extraData
 * validated as the chain would validate addPieces (create-and-add without a
 * data set): a wrong signer or a spent nonce is a 400. A pull creates no data
 * set: Curio only fetches; the client creates with create-and-add later.
 */
import { sha256 } from "viem";
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
import { parsePieceCidV2, PIECE_SIZE_MIN, type PieceInfo } from "./piece.ts";
import { decodeCreate, decodeCreateAndAdd, Revert } from "./typed_data.ts";

const MAX_PIECES = 40;
const ROUTE = "POST /pdp/piece/pull";

interface PullBody {
  extraData: string;
  dataSetId: number;
  recordKeeper: string | null;
  pieces: { pieceCid: string; sourceUrl: string }[];
}

/** PullRequest.Validate: the shape alone; a message, or null when sound. */
function validate(body: Record<string, unknown>, allowHttp: boolean): PullBody | string {
  const extraData = typeof body.extraData === "string" ? body.extraData : "";
  const dataSetId = body.dataSetId ?? 0;
  if (!Number.isSafeInteger(dataSetId) || (dataSetId as number) < 0) {
    return "dataSetId must be an unsigned integer";
  }
  const recordKeeper = typeof body.recordKeeper === "string" ? body.recordKeeper : null;
  const pieces = Array.isArray(body.pieces) ? body.pieces : [];
  if (extraData === "") return "extraData is required";
  if (dataSetId === 0 && !recordKeeper) {
    return "recordKeeper is required when dataSetId is not provided or is 0";
  }
  if (pieces.length === 0) return "at least one piece is required";
  if (pieces.length > MAX_PIECES) {
    return `piece count (${pieces.length}) exceeds the maximum allowed per pull (${MAX_PIECES})`;
  }
  const seen = new Set<string>();
  for (const [i, piece] of pieces.entries()) {
    const { pieceCid, sourceUrl } = piece ?? {};
    if (typeof pieceCid !== "string" || pieceCid === "") return `piece[${i}]: pieceCid is required`;
    if (typeof sourceUrl !== "string" || sourceUrl === "") {
      return `piece[${i}]: sourceUrl is required`;
    }
    if (seen.has(`${pieceCid}\0${sourceUrl}`)) return `piece[${i}]: duplicate pieceCid/sourceUrl`;
    seen.add(`${pieceCid}\0${sourceUrl}`);
    const scheme = URL.parse(sourceUrl)?.protocol;
    if (scheme !== "https:" && !(allowHttp && scheme === "http:")) {
      return `piece[${i}]: URL must use HTTPS scheme, got "${scheme?.slice(0, -1) ?? ""}"`;
    }
  }
  return { extraData, dataSetId: dataSetId as number, recordKeeper, pieces };
}

export async function handlePull(core: FakeCore, request: Request): Promise<Response> {
  const raw = await readJson(request);
  if (raw === null) return serverError(400, "Invalid request body: not JSON");
  const body = validate(raw, core.options.allowInsecureSources);
  if (typeof body === "string") return serverError(400, `Validation error: ${body}`);
  const createNew = body.dataSetId === 0;
  if (createNew) {
    if (
      ZERO_ADDRESS.test(body.recordKeeper!) || !/^(0x)?[0-9a-fA-F]{40}$/.test(body.recordKeeper!)
    ) {
      return serverError(400, "Invalid recordKeeper address");
    }
    if (body.recordKeeper!.toLowerCase() !== core.options.recordKeeper.toLowerCase()) {
      return serverError(403, "recordKeeper address not allowed for public service");
    }
  }
  const bytes = hexBytes(body.extraData);
  if (bytes === null) return serverError(400, "Invalid extraData: not hex");
  const key = `${sha256(bytes)}/${body.dataSetId}/${body.recordKeeper ?? ""}`;
  const existing = core.pulls.byKey(key);
  if (existing) return json(core.pulls.answer(existing));

  if (!createNew && !core.records.dataSets.has(body.dataSetId)) {
    return serverError(404, "Data set not found");
  }
  const extraData = "0x" + body.extraData.replace(/^0x/, "");
  let payer;
  try {
    payer = createNew
      ? decodeCreate(decodeCreateAndAdd(extraData).create).payer
      : core.chain.payerOf(body.dataSetId);
    if (!payer || ZERO_ADDRESS.test(payer)) throw new Error("payer is zero address");
  } catch (error) {
    return serverError(400, `Invalid pull payer: ${(error as Error).message}`);
  }
  const pieces: PieceInfo[] = [];
  for (const [i, piece] of body.pieces.entries()) {
    try {
      pieces.push(parsePieceCidV2(piece.pieceCid));
    } catch (error) {
      return serverError(400, `Invalid pieceCid[${i}]: ${(error as Error).message}`);
    }
    if (pieces[i].rawSize < PIECE_SIZE_MIN) {
      return serverError(
        400,
        `pieceCid[${i}]: size ${pieces[i].rawSize} is below minimum ${PIECE_SIZE_MIN}`,
      );
    }
  }
  const call: Call = createNew
    ? { kind: "createAndAdd", pieces, extraData }
    : { kind: "add", dataSetId: body.dataSetId, pieces, extraData };
  try {
    await core.chain.simulate(call, ROUTE);
  } catch (error) {
    if (!(error instanceof Revert)) throw error;
    return serverError(
      400,
      `extraData validation failed: addPieces validation failed: ${error.message}`,
    );
  }
  const created = core.pulls.create(
    key,
    payer,
    pieces.map((piece, i) => ({ piece, sourceUrl: body.pieces[i].sourceUrl })),
  );
  if ("retryAfterSeconds" in created) {
    return text(429, "pull queue backpressure", {
      "retry-after": String(created.retryAfterSeconds),
    });
  }
  return json(core.pulls.answer(created));
}
