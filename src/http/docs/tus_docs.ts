/** What /openapi.json says of the tus endpoint's routes (tus.ts serves them). */
import type { ErrorCode } from "../../kernel/errors.ts";
import { CHANGE_TOKEN_ERRORS, STORING_ERRORS, TOKEN_ERRORS } from "./route_doc.ts";
import type { ParameterDoc, RouteDoc } from "./route_doc.ts";
import { RATE_LIMIT_HEADERS } from "./upload_docs.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { integerSchema, stringSchema } from "./schemas/json_schema.ts";

const TUS_RESUMABLE: ParameterDoc = {
  name: "Tus-Resumable",
  in: "header",
  required: true,
  description: "The tus protocol version: 1.0.0 (anything else is 412 unsupported_version)",
  schema: { ...stringSchema, const: "1.0.0" },
};

const UPLOAD_ID: ParameterDoc = {
  name: "id",
  in: "path",
  description: "The upload's id: the last segment of the Location its creation answered",
  schema: { ...stringSchema, pattern: "^[0-9a-f]{32}$" },
};

const OFFSET_BODY =
  "The next bytes of the file, as Content-Type: application/offset+octet-stream, with a " +
  "Content-Length or chunked. A body that is cut off keeps what arrived: HEAD says how much. " +
  "Each request's body is admitted as an upload's (--upload-memory, a client's share of it, " +
  "--max-uploads-per-client) and read under --body-min-rate.";

/** Answers that report an upload's state. */
const STATE_HEADERS: HeaderUse = {
  "Tus-Resumable": "always",
  "Upload-Offset": "always",
  "Upload-Expires": "sometimes",
  "X-Storage-Cid": "sometimes",
  "X-Storage-Deal-Id": "sometimes",
};

/** Every tus error answer carries Tus-Resumable; a 409 also says the offset. */
const TUS_ERROR_HEADERS = {
  409: { "Tus-Resumable": "always", "Upload-Offset": "sometimes" },
  412: { "Tus-Resumable": "always", "Tus-Version": "always" },
} as const;

/** What any request for an existing upload may be refused with. */
const UPLOAD_ERRORS = [
  "unsupported_version",
  ...TOKEN_ERRORS,
  "insufficient_scope",
  "not_found",
  "upload_locked",
] as const satisfies ErrorCode[];

export const tusDocs = {
  create: {
    operationId: "createResumableUpload",
    summary: "Create a resumable (tus 1.0.0) upload, optionally with its first bytes",
    description: "Upload-Metadata carries cid (required), filetype (the Content-Type, " +
      "required) and filename. Checked and charged as POST /api/upload: the per-file cap " +
      "(413) and the daily cap (429) are decided from Upload-Length, which is reserved until " +
      "the upload finishes, is terminated, or expires 24 hours after its creation, whatever it sends meanwhile. Bytes sent " +
      "with the creation (creation-with-upload) are appended at once; when they are all of " +
      "them, this answer finishes the upload. A filetype of application/vnd.ipld.car is " +
      "checked block by block as the bytes arrive, over all the upload's requests, as " +
      "POST /api/upload checks a CAR (400 invalid_car, or 413 too_many_blocks past the " +
      "tier's block cap, ends the upload, nothing kept); its " +
      "blocks are then served by /ipfs/{cid} and GET names its roots.",
    auth: "optional",
    scope: "put",
    parameters: [
      TUS_RESUMABLE,
      {
        name: "Upload-Length",
        in: "header",
        required: true,
        description: "The file's size in bytes (Upload-Defer-Length is not offered)",
        schema: { ...integerSchema, minimum: 1 },
      },
      {
        name: "Upload-Metadata",
        in: "header",
        required: true,
        description: "Comma-separated `key base64(value)` pairs: cid, filetype, filename; " +
          "other keys are ignored",
        schema: stringSchema,
      },
    ],
    requestBody: { description: OFFSET_BODY, body: { binary: true } },
    responses: [{
      status: 201,
      description: "Created (and finished, when the body was the whole file: X-Storage-Cid)",
      headers: { ...STATE_HEADERS, Location: "always", ...RATE_LIMIT_HEADERS },
    }],
    errorHeaders: { ...TUS_ERROR_HEADERS, 429: RATE_LIMIT_HEADERS },
    errors: [
      "unsupported_version",
      "invalid_request",
      "empty_bodyy",
      "invalid_cid",
      "invalid_content_type",
      "invalid_filename",
      ...CHANGE_TOKEN_ERRORS,
      "insufficient_scope",
      "unsupported_media_type",
      "invalid_manifest",
      "manifest_incomplete",
      "invalid_car",
      "too_many_blocks",
      "too_many_uploads",
      ...STORING_ERRORS,
    ],
  },
  status: {
    operationId: "getResumableUpload",
    summary: "A finished resumable upload's result (HEAD: its offset, as tus asks)",
    description: "HEAD needs Tus-Resumable and answers Upload-Offset, Upload-Length, " +
      "Upload-Metadata and, while unfinished, Upload-Expires. GET answers the result of the " +
      "finished upload (as POST /api/upload), or 409 upload_incomplete.",
    auth: "optional",
    scope: "put",
    parameters: [UPLOAD_ID],
    responses: [{
      status: 200,
      description: "The upload's result",
      body: { json: "UploadResult" },
      headers: { ...STATE_HEADERS, "Upload-Length": "always", "Upload-Metadata": "sometimes" },
    }],
    errorHeaders: TUS_ERROR_HEADERS,
    errors: [...UPLOAD_ERRORS, "upload_incomplete"],
  },
  append: {
    operationId: "appendToResumableUpload",
    summary: "Append bytes to a resumable upload at Upload-Offset",
    description: "The last byte verifies the cid (400 cid_mismatch removes the upload: nothing " +
      "is kept) and commits as POST /api/upload does; that answer carries X-Storage-Cid and " +
      "X-Storage-Deal-Id. Another offset than the upload's is 409 offset_mismatch. A body " +
      "that stalls (--body-idle-timeout) or comes slower than --body-min-rate is cut with " +
      "408 request_timeout; what arrived is kept, and its Upload-Offset says how much. " +
      "A CAR's bad block is 400 invalid_car and removes the upload, as does a block past " +
      "the tier's block cap (413 too_many_blocks).",
    auth: "optional",
    scope: "put",
    parameters: [
      UPLOAD_ID,
      TUS_RESUMABLE,
      {
        name: "Upload-Offset",
        in: "header",
        required: true,
        description: "Where the body starts: the upload's current offset (HEAD says it)",
        schema: { ...integerSchema, minimum: 0 },
      },
    ],
    requestBody: { description: OFFSET_BODY, body: { binary: true } },
    responses: [{ status: 204, description: "Appended (or finished)", headers: STATE_HEADERS }],
    errorHeaders: {
      ...TUS_ERROR_HEADERS,
      408: { "Tus-Resumable": "always", "Upload-Offset": "always" },
    },
    errors: [
      ...UPLOAD_ERRORS,
      "csrf_rejected",
      "invalid_request",
      "unsupported_media_type",
      "offset_mismatch",
      "too_large",
      "cid_mismatch",
      "invalid_manifest",
      "manifest_incomplete",
      "invalid_car",
      "too_many_blocks",
      "request_timeout",
      "cid_conflict",
      "stage_failed",
      "server_busy",
      "rate_limited",
      "insufficient_storage",
    ],
  },
  terminate: {
    operationId: "terminateResumableUpload",
    summary: "End a resumable upload: its bytes and its reservation go",
    description: "A finished upload's deal stays; only its record goes.",
    auth: "optional",
    scope: "put",
    parameters: [UPLOAD_ID, TUS_RESUMABLE],
    responses: [{ status: 204, description: "Ended", headers: { "Tus-Resumable": "always" } }],
    errorHeaders: TUS_ERROR_HEADERS,
    errors: [...UPLOAD_ERRORS, "csrf_rejected"],
  },
} satisfies Record<string, RouteDoc>;
