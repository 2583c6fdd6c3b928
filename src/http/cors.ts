/**
 * CORS: everything the service serves is public or bearer-authenticated (no
 * cookies), so any origin may read it. Browsers see only the headers listed
 * in Expose-Headers, hence the explicit list (WWW-Authenticate included, so a
 * browser client can tell an expired token from a revoked one). Preflights
 * allow If-None-Match, Range and If-Range, so retrievals can be conditional
 * and partial from browser code (which reads Content-Range and Accept-Ranges).
 */
const EXPOSED_HEADERS = [
  "Content-Disposition",
  "Content-Length",
  "Content-Range",
  "Accept-Ranges",
  "ETag",
  "X-Service-Piece-Cid",
  "X-Service-Source",
  "WWW-Authenticate",
  "Retry-After",
  "RateLimit",
  "RateLimit-Policy",
  "Deprecation",
  "Link",
].join(", ");

export function applyCorsHeaders(headers: Headers): void {
  headers.set("access-control-allow-origin", "*");
  headers.set("access-control-expose-headers", EXPOSED_HEADERS);
}

/** The answer to any OPTIONS request: 204 allowing what the API uses. */
export function preflightResponse(): Response {
  const headers = new Headers({
    "access-control-allow-methods": "GET, HEAD, POST, DELETE, OPTIONS",
    "access-control-allow-headers":
      "Authorization, Content-Type, X-Filename, If-None-Match, Range, If-Range",
    "access-control-max-age": "86400",
  });
  applyCorsHeaders(headers);
  return new Response(null, { status: 204, headers });
}
