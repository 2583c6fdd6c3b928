/**
 * What a route row says about itself for the API document (/openapi.json is
 * generated from these, see openapi.ts). Kept beside the handler wiring in
 * routes.ts so a new route cannot be served undocumented.
 */
import type { Scope } from "../domain.ts";
import type { ErrorCode } from "../errors.ts";

export interface RouteDoc {
  /** Unique, camelCase: the method name a generated client gets. */
  operationId: string;
  summary: string;
  /** "public": no token used; "optional": a token changes the tier; "token": required. */
  auth: "public" | "optional" | "token";
  /** The scope a token needs, when auth is "token" (or when a token is sent, for "optional"). */
  scope?: Scope;
  /**
   * Every error code the handler can answer, besides those of the pipeline that
   * every route shares (method_not_allowed, internal_error, storage_offline).
   */
  errors: readonly ErrorCode[];
}
