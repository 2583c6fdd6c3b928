/**
 * What the three retrieval routes (/p/, /f/, /piece/) say about themselves in
 * /openapi.json, built from one description of a retrieval answer: 200 with
 * the bytes, 206 with a range of them, 304 for a matching If-None-Match, and
 * the errors every retrieval can answer (416 with `Content-Range: bytes *\/size`).
 * The three routes' docs are here together, in the words that tell them
 * apart; the handlers are in http/retrieval/.
 */
import type { ErrorCode } from "../../kernel/errors.ts";
import { CID_DESCRIPTION, CID_SCHEMA, IF_NONE_MATCH_PARAMETER } from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";

/** What a retrieval answer carries besides its body. */
const BYTES_HEADERS: HeaderUse = {
  "Content-Type": "always",
  "Content-Length": "always",
  "Content-Disposition": "always",
  "Cache-Control": "always",
  ETag: "always",
  "Accept-Ranges": "always",
  "X-Service-Piece-Cid": "always",
  "X-Service-Source": "always",
  "X-Content-Type-Options": "always",
  "Content-Security-Policy": "always",
};
const { "Content-Length": _noLengthWithoutBody, ...NOT_MODIFIED_HEADERS } = BYTES_HEADERS;

/** Every retrieval's errors besides those of the pipeline. */
const RETRIEVAL_ERRORS: ErrorCode[] = [
  "invalid_cid",
  "not_found",
  "gone",
  "range_not_satisfiable",
  "piece_corrupt",
];

export interface RetrievalDocOptions {
  operationId: string;
  summary: string;
  description: string;
  /** The path parameter's name ("cid", "pieceCid") and what it takes. */
  param: { name: string; description: string };
  /** What the 200's body is. */
  whole: string;
}

function retrievalDoc(options: RetrievalDocOptions): RouteDoc {
  return {
    operationId: options.operationId,
    summary: options.summary,
    description: options.description,
    auth: "public",
    parameters: [
      {
        name: options.param.name,
        in: "path",
        description: options.param.description,
        schema: CID_SCHEMA,
      },
      IF_NONE_MATCH_PARAMETER,
      {
        name: "Range",
        in: "header",
        description: "One byte range (bytes=a-b, bytes=a- or bytes=-n) answers 206 with those " +
          "bytes; a range that starts past the end answers 416; several ranges, another unit " +
          "or a malformed value answer 200 with the whole (RFC 9110 §14)",
        schema: { ...stringSchema, examples: ["bytes=0-1048575"] },
      },
      {
        name: "If-Range",
        in: "header",
        description: "Honour Range only if this is the answer's ETag (strong comparison); " +
          "otherwise the whole is sent with 200",
        schema: stringSchema,
      },
    ],
    responses: [
      {
        status: 200,
        description: options.whole,
        body: { binary: true },
        headers: BYTES_HEADERS,
      },
      {
        status: 206,
        description: "The byte range asked for, cut at the end",
        body: { binary: true },
        headers: { ...BYTES_HEADERS, "Content-Range": "always" },
      },
      {
        status: 304,
        description: "Not modified: If-None-Match named this answer's ETag",
        headers: NOT_MODIFIED_HEADERS,
      },
    ],
    errors: RETRIEVAL_ERRORS,
    errorHeaders: { 416: { "Content-Range": "always" } },
  };
}

/** The cid parameter of /p/ and /f/. */
const CID_PARAM = { name: "cid", description: CID_DESCRIPTION };

/** GET /p/{cid}. */
export const getPieceDoc = retrievalDoc({
  operationId: "getPiece",
  summary: "Retrieve a piece's bytes (public)",
  description: "The bytes stored under the cid, whole or one byte range of them. A split " +
    "file's manifest is served as its own bytes here; GET /f/{cid} serves the file it describes.",
  param: CID_PARAM,
  whole: "The stored bytes, with the Content-Type given at upload",
});

/** GET /f/{cid}. */
export const getFileDoc = retrievalDoc({
  operationId: "getFile",
  summary: "Retrieve a whole file, split or not (public)",
  description: "For a manifest (a piece stored with Content-Type " +
    "application/vnd.storage-manifest+json), the file it describes: its pieces in order as one " +
    'body, with the manifest\'s type, name and total length, ETag "<cid>.file", and byte ranges ' +
    "across piece boundaries. A piece that fails while the body streams cuts the answer off " +
    "(never a short or wrong file that looks whole). Any other cid answers as GET /p/{cid}.",
  param: CID_PARAM,
  whole: "The whole file",
});

/** GET /piece/{pieceCid}. */
export const getGatewayPieceDoc = retrievalDoc({
  operationId: "getGatewayPiece",
  summary: "Retrieve a piece by its PieceCID, as the IPFS piece gateway spec says (public)",
  description: "The URL a Filecoin storage provider pulls a staged piece from. By its " +
    "PieceCIDv2 or PieceCIDv1, whatever cid it was uploaded under. A piece uploaded under " +
    "another cid (opaque, sha2-256, a CAR's root) gets its PieceCIDv2 computed in the " +
    "background after the upload: until then, 404 not_found by it. Always " +
    "application/octet-stream, Content-Disposition attachment named by the cid, immutable " +
    "caching. Other cids are 400 invalid_cid.",
  param: {
    name: "pieceCid",
    description: "A PieceCIDv2 (bafkzcib…) or PieceCIDv1 (baga6ea4seaq…)",
  },
  whole: "The piece's bytes",
});

/** GET /api/pieces/{cid}. */
export const getPieceStatusDoc: RouteDoc = {
  operationId: "getPieceStatus",
  summary: "Whether a piece is stored (public): 200 with yes or no",
  description: "What GET /p/{cid} would do, as a fact: stored is true when it serves the " +
    "bytes, false when nothing is stored under the cid, or it was removed or found corrupt. " +
    "Clients ask it before sending a piece; unlike HEAD /p/{cid} it never answers 404.",
  auth: "public",
  parameters: [{
    name: "cid",
    in: "path",
    description: CID_DESCRIPTION,
    schema: CID_SCHEMA,
  }],
  responses: [{ status: 200, description: "Whether it is stored", body: { json: "PieceStatus" } }],
  errors: ["invalid_cid"],
};
