/**
 * The deprecated `?token=` form still works until v1, but every response to
 * it says so: `Deprecation` (RFC 9745, the date it was deprecated) and a
 * `Link` with rel="deprecation" to a document that explains the move.
 */
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";
import type { Deprecations } from "../../kernel/wire.ts";

/** 2026-01-01T00:00:00Z: when the query-string token form was announced as deprecated. */
const QUERY_TOKEN_DEPRECATED_AT = 1767225600;

export function usesQueryToken(request: Request, url: URL): boolean {
  return url.searchParams.has("token") && !request.headers.has("authorization");
}

export function applyDeprecationHeaders(headers: Headers, baseUrl: string): void {
  headers.set("deprecation", `@${QUERY_TOKEN_DEPRECATED_AT}`);
  headers.set("link", `<${baseUrl}/docs/deprecations>; rel="deprecation"; type="application/json"`);
}

export const deprecationsHandler: Handler = () =>
  jsonResponse(200, DEPRECATIONS, { "cache-control": "public, max-age=3600" });

const DEPRECATIONS: Deprecations = {
  deprecations: [{
    feature: "query-string token (?token=<ACCESS_TOKEN>)",
    deprecatedAt: new Date(QUERY_TOKEN_DEPRECATED_AT * 1000).toISOString().replace(".000Z", "Z"),
    removedIn: "v1",
    instead: "Send the token in the header: Authorization: Bearer <ACCESS_TOKEN>",
  }],
};
