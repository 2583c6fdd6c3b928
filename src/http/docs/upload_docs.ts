/**
 * What /openapi.json says of the routes that store bytes in one request or
 * make a deal on them (http/upload/: upload.ts, deal_create.ts) and of the
 * piece-cid routes beside them (piece_cids.ts). Apart from the handlers, as
 * the tus routes' doc is (tus_docs.ts), so a handler's file is the adapter
 * and nothing else; several docs share the upload's answer.
 */
import type { ErrorCode } from "../../kernel/errors.ts";
import {
  BYTES_BODY_FRAMING,
  CHANGE_TOKEN_ERRORS,
  CID_DESCRIPTION,
  CID_SCHEMA,
  CONTENT_LENGTH_ERRORS,
  JSON_BODY_ERRORS,
  STORING_ERRORS,
} from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";

/** The caller's daily cap, sent by uploads, accepted or refused at the cap. */
export const RATE_LIMIT_HEADERS: HeaderUse = { RateLimit: "always", "RateLimit-Policy": "always" };

/** An upload's answer (POST /api/upload's result, with the caller's cap), and its 429's headers. */
function answeredAsAnUpload(description: string): Pick<RouteDoc, "responses" | "errorHeaders"> {
  return {
    responses: [{
      status: 200,
      description,
      body: { json: "UploadResult" },
      headers: RATE_LIMIT_HEADERS,
    }],
    errorHeaders: { 429: RATE_LIMIT_HEADERS },
  };
}

/** What a body of bytes can be refused with once its Content-Length is read, until it is stored. */
export const STORED_BODY_ERRORS = [
  "invalid_filename",
  "invalid_manifest",
  "manifest_incomplete",
  "invalid_car",
  ...STORING_ERRORS,
  "storage_offline",
] as const satisfies ErrorCode[];

export const uploadDoc: RouteDoc = {
  operationId: "upload",
  summary: "Stage a file under its cid (sponsored without a token)",
  description: "PieceCIDv2, PieceCIDv1 and sha2-256 CIDv1 cids are checked against the " +
    "bytes; other cids are stored as given unless the server requires verifiable cids. " +
    "Size and caps are decided from Content-Length before a byte is read. Bytes under " +
    "a stored cid never change: the same bytes again answer 200, others 409. A manifest " +
    "(Content-Type application/vnd.storage-manifest+json) is accepted only when it parses " +
    "and every piece it lists is stored with the listed size. A body sent as " +
    "application/vnd.ipld.car (CARv1, or CARv2) is also checked block by block " +
    "(sha2-256 and identity multihashes; anything else, a block that does not hash to its " +
    "cid or a malformed CAR is 400 invalid_car, nothing stored; more blocks than the " +
    "tier's --sponsored-car-max-blocks or --car-max-blocks is 413 too_many_blocks, nothing " +
    "stored), its blocks are then " +
    "served by /ipfs/{cid}, and the result names its roots.",
  auth: "optional",
  scope: "put",
  parameters: [
    {
      name: "cid",
      in: "query",
      required: true,
      description: CID_DESCRIPTION,
      schema: CID_SCHEMA,
    },
    {
      name: "X-Filename",
      in: "header",
      description: "The file's name, URL-encoded UTF-8, at most 255 bytes decoded, no " +
        "control characters and no bidirectional text controls (U+061C, U+200E-U+200F, " +
        "U+202A-U+202E, U+2066-U+2069), no line or paragraph separators (U+2028, U+2029) " +
        "and no zero-width characters (U+200B-U+200D, U+FEFF); served back in " +
        "Content-Disposition",
      schema: stringSchema,
    },
  ],
  requestBody: {
    description: `The file's bytes. ${BYTES_BODY_FRAMING} Its Content-Type (required; ` +
      "any media type but a form: multipart/form-data and " +
      "application/x-www-form-urlencoded are refused) is stored and served back.",
    body: { binary: true },
  },
  ...answeredAsAnUpload("Stored (or already stored with the same bytes)"),
  errors: [
    "invalid_cid",
    ...CHANGE_TOKEN_ERRORS,
    "insufficient_scope",
    ...CONTENT_LENGTH_ERRORS,
    "invalid_content_type",
    ...STORED_BODY_ERRORS,
    "too_many_blocks",
  ],
};

export const createDealDoc: RouteDoc = {
  operationId: "createDeal",
  summary: "Make a deal on bytes already stored, without sending them",
  description: "Charged and answered as POST /api/upload of the stored bytes would be: the " +
    "caller's tier and term, the piece's size against the per-file and daily caps. A cid " +
    "that is not stored is 404: upload its bytes instead.",
  auth: "optional",
  scope: "put",
  requestBody: { description: "The stored cid", body: { json: "DealRequest" } },
  ...answeredAsAnUpload("The new deal"),
  errors: [
    ...JSON_BODY_ERRORS,
    "invalid_cid",
    ...CHANGE_TOKEN_ERRORS,
    "insufficient_scope",
    "not_found",
    "piece_corrupt",
    "rate_limited",
    "quota_exceeded",
    "wallet_unavailable",
  ],
};

export const describePieceCidsDoc: RouteDoc = {
  operationId: "describePieceCids",
  summary: "Which cid forms the server verifies and how to compute them",
  auth: "public",
  responses: [{
    status: 200,
    description: "The accepted forms",
    body: { json: "PieceCidInfo" },
  }],
  errors: [],
};

export const computePieceCidDoc: RouteDoc = {
  operationId: "computePieceCid",
  summary: "Compute the PieceCIDv2 of a body without storing it",
  description: "Same per-file cap as an upload; nothing is stored and no quota is charged.",
  auth: "token",
  scope: "put",
  requestBody: { description: `The bytes. ${BYTES_BODY_FRAMING}`, body: { binary: true } },
  responses: [{
    status: 200,
    description: "The body's PieceCIDv2",
    body: { json: "PieceCidResult" },
  }],
  errors: [
    ...CHANGE_TOKEN_ERRORS,
    "insufficient_scope",
    ...CONTENT_LENGTH_ERRORS,
    "too_large",
    "incomplete_body",
    "request_timeout",
    "rate_limited",
    "server_busy",
  ],
};
