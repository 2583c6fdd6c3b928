/**
 * What a route says about itself for the API document (/openapi.json is
 * generated from these, see openapi.ts). Every route's doc lives in this
 * folder, one file per room of http/ (`uploadDoc` in upload_docs.ts, …), so
 * the handlers hold only handling and what the API promises reads in one
 * place; a row of the route table (routes.ts) cannot be served without one.
 * Below the shapes: the parts several routes' docs share.
 */
import type { Scope } from "../../domain/vocabulary.ts";
import type { ErrorCode } from "../../kernel/errors.ts";
import type { SchemaName } from "./schemas/bodies.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";
import type { JsonSchema } from "./schemas/json_schema.ts";

export interface ParameterDoc {
  name: string;
  /** Never "header" for Content-Length: clients send it from the body and browsers forbid setting it. */
  in: "path" | "query" | "header";
  /** Path parameters are always required. */
  required?: boolean;
  description: string;
  schema: JsonSchema;
}

/** A JSON body (one of components.schemas), bytes of any media type, or text of one type. */
export type BodyDoc = { json: SchemaName } | { binary: true } | { text: `text/${string}` };

export interface RequestBodyDoc {
  description: string;
  body: BodyDoc;
}

/** One answer that is not an error: its status, body (none for 304) and headers. */
export interface SuccessDoc {
  status: number;
  description: string;
  body?: BodyDoc;
  headers?: HeaderUse;
}

export interface RouteDoc {
  /** Unique, camelCase: the method name a generated client gets. HEAD gets head + the rest. */
  operationId: string;
  summary: string;
  description?: string;
  /** "public": no token used; "optional": a token changes the tier; "token": required. */
  auth: "public" | "optional" | "token";
  /** The scope a token needs, when auth is "token" (or when a token is sent, for "optional"). */
  scope?: Scope;
  parameters?: readonly ParameterDoc[];
  requestBody?: RequestBodyDoc;
  responses: readonly SuccessDoc[];
  /**
   * Every error code the handler can answer, besides those of the pipeline that
   * every route shares (method_not_allowed, internal_error, storage_offline).
   */
  errors: readonly ErrorCode[];
  /**
   * Headers the route's errors send beyond the pipeline's own (WWW-Authenticate on
   * 401/403, Allow on 405, Retry-After on 429), by status.
   */
  errorHeaders?: { readonly [status: number]: HeaderUse };
}

/** The cid format of every endpoint (kernel/cid_format.ts). */
export const CID_SCHEMA: JsonSchema = { ...stringSchema, pattern: "^[a-zA-Z0-9]{8,80}$" };
export const CID_DESCRIPTION = "8 to 80 letters or digits, any case (see GET /api/piece-cids)";

/** A conditional GET of content that never changes under its name. */
export const IF_NONE_MATCH_PARAMETER: ParameterDoc = {
  name: "If-None-Match",
  in: "header",
  description: "An ETag of an earlier answer (or *): a match answers 304 without a body",
  schema: stringSchema,
};

/** What POST bodies of bytes need, said where a client reads the request body's doc. */
export const BYTES_BODY_FRAMING = "Sent with a Content-Length, which every HTTP client sets " +
  "from the body (chunked transfer-encoding is refused with 411 length_required; 0 bytes with " +
  "400 empty_bodyy).";

/** Codes of any route that reads the caller's token. */
export const TOKEN_ERRORS = ["invalid_token", "revoked_token"] as const satisfies ErrorCode[];
/**
 * Codes of any route that reads the caller's token and is not a GET: the
 * session cookie alone signs in such a request only from the service's own
 * page (auth/sessions.ts).
 */
export const CHANGE_TOKEN_ERRORS = [
  ...TOKEN_ERRORS,
  "csrf_rejected",
] as const satisfies ErrorCode[];
/** Codes of any route whose body is bytes framed by a Content-Length (body.ts). */
export const CONTENT_LENGTH_ERRORS = [
  "no_body",
  "empty_bodyy",
  "invalid_request",
  "length_required",
] as const satisfies ErrorCode[];
/** What storing bytes can be refused with once the caller and the headers passed (caps, body, store). */
export const STORING_ERRORS = [
  "cid_mismatch",
  "too_large",
  "rate_limited",
  "quota_exceeded",
  "incomplete_body",
  "request_timeout",
  "cid_conflict",
  "stage_failed",
  "server_busy",
  "wallet_unavailable",
  "insufficient_storage",
] as const satisfies ErrorCode[];
/** Codes of any route that reads a JSON body. */
export const JSON_BODY_ERRORS = [
  "invalid_json",
  "too_large",
  "incomplete_body",
  "request_timeout",
] as const satisfies ErrorCode[];
