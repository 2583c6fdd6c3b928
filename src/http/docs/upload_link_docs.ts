/**
 * What /openapi.json says of signed upload links (http/upload/upload_links.ts
 * serves them): minting one, and the one credential-less upload it allows.
 */
import {
  BYTES_BODY_FRAMING,
  CHANGE_TOKEN_ERRORS,
  CONTENT_LENGTH_ERRORS,
  JSON_BODY_ERRORS,
} from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import { stringSchema } from "./schemas/json_schema.ts";
import { RATE_LIMIT_HEADERS, STORED_BODY_ERRORS } from "./upload_docs.ts";

export const createUploadLinkDoc: RouteDoc = {
  operationId: "createUploadLink",
  summary: "Mint a signed link for one upload of this cid, size and type, by anyone",
  description: "For a browser or a CI job that must not hold a token: whoever has the URL " +
    "may POST exactly these bytes once, from any origin, without credentials, for at most " +
    "an hour (and never past the token's expiry); the upload counts as the token's own " +
    "(tier, caps, quota, deal owner). The URL is the only copy of its secret: the server " +
    "keeps a hash.",
  auth: "token",
  scope: "put",
  requestBody: { description: "The upload the link allows", body: { json: "UploadLinkRequest" } },
  responses: [{ status: 201, description: "The link", body: { json: "UploadLink" } }],
  errors: [
    ...CHANGE_TOKEN_ERRORS,
    "insufficient_scope",
    ...JSON_BODY_ERRORS,
    "invalid_cid",
    "invalid_request",
    "invalid_content_type",
    "invalid_filename",
    "cid_mismatch",
  ],
};

export const uploadThroughLinkDoc: RouteDoc = {
  operationId: "uploadThroughLink",
  summary: "Upload the bytes a signed link allows, once, without credentials",
  description: "As POST /api/upload, with the link's terms: Content-Length and Content-Type " +
    "must be the link's (a cid query parameter and X-Filename, when sent, too), else 401 " +
    "invalid_link before a byte is read. The link is spent once its owner's caps admit the " +
    "upload; a second use, an expired or altered link, or a link whose token was revoked " +
    "is 401 invalid_link, and nothing is stored. The body is checked as an upload's: one " +
    "that fails a check has spent the link, among them a CAR of more blocks than the " +
    "owner's tier allows (413 too_many_blocks: counted as the blocks arrive, after the " +
    "link is spent; nothing stored or charged, mint a new link once it fits). " +
    "Credentials sent along are ignored.",
  auth: "public",
  parameters: [
    {
      name: "link",
      in: "path",
      description: "The link's secret, as POST /api/upload-links put it in the URL",
      schema: stringSchema,
    },
  ],
  requestBody: {
    description: `The file's bytes. ${BYTES_BODY_FRAMING}`,
    body: { binary: true },
  },
  responses: [{
    status: 200,
    description: "Stored, as the link owner's upload",
    body: { json: "UploadResult" },
    headers: RATE_LIMIT_HEADERS,
  }],
  errorHeaders: { 429: RATE_LIMIT_HEADERS },
  errors: [
    "invalid_link",
    ...CONTENT_LENGTH_ERRORS,
    ...STORED_BODY_ERRORS,
    "too_many_blocks",
  ],
};
