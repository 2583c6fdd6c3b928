/**
 * What a route row says about itself for the API document (/openapi.json is
 * generated from these, see openapi.ts). Kept beside the handler wiring in
 * routes.ts so a new route cannot be served undocumented, and so what a route
 * reads, sends and refuses is written once.
 */
import type { Scope } from "../domain.ts";
import type { ErrorCode } from "../errors.ts";
import type { SchemaName } from "./schemas/bodies.ts";
import type { HeaderUse } from "./schemas/headers.ts";
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
