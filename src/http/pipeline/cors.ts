/**
 * CORS: everything the service serves is public or bearer-authenticated (no
 * cookies), so any origin may read it. Browsers see only the headers listed
 * in Expose-Headers, hence the explicit list (WWW-Authenticate included, so a
 * browser client can tell an expired token from a revoked one). Preflights
 * allow If-None-Match, Range and If-Range, so retrievals can be conditional
 * and partial from browser code (which reads Content-Range and Accept-Ranges),
 * and what tus clients send (PATCH, DELETE, the Upload-* headers); a tus
 * client in a browser reads Location, Upload-Offset and Upload-Length, and
 * finds its deal in X-Storage-Cid / X-Storage-Deal-Id.
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
  "Location",
  "Tus-Resumable",
  "Tus-Version",
  "Tus-Extension",
  "Tus-Max-Size",
  "Upload-Offset",
  "Upload-Length",
  "Upload-Metadata",
  "Upload-Expires",
  "X-Storage-Cid",
  "X-Storage-Deal-Id",
].join(", ");

const ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "X-Filename",
  "If-None-Match",
  "Range",
  "If-Range",
  "Tus-Resumable",
  "Upload-Length",
  "Upload-Offset",
  "Upload-Metadata",
  "Upload-Defer-Length",
  "Upload-Concat",
  "X-HTTP-Method-Override",
  "X-Requested-With",
].join(", ");

export function applyCorsHeaders(headers: Headers): void {
  headers.set("access-control-allow-origin", "*");
  headers.set("access-control-expose-headers", EXPOSED_HEADERS);
}

/** The answer to any OPTIONS request: 204 allowing what the API uses, plus `extra` headers. */
export function preflightResponse(extra: Record<string, string> = {}): Response {
  const headers = new Headers({
    ...extra,
    "access-control-allow-methods": "GET, HEAD, POST, PATCH, DELETE, OPTIONS",
    "access-control-allow-headers": ALLOWED_HEADERS,
    "access-control-max-age": "86400",
  });
  applyCorsHeaders(headers);
  return new Response(null, { status: 204, headers });
}
