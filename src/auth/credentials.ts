/**
 * Finding the credentials of a request: `Authorization: Bearer <token>`, the
 * deprecated `?token=` query parameter, or the page's session cookie
 * (`__Host-storage_session`, auth/sessions.ts). When several are present the
 * header wins, then the query parameter: a cookie only speaks for a request
 * that names no token.
 */
import type { CredentialForm } from "./caller.ts";

/** The page's session cookie. `__Host-`: Secure, Path=/, no Domain, set by this origin only. */
export const SESSION_COOKIE = "__Host-storage_session";

export interface Credentials {
  /** A token, or (via "cookie") a session's secret. */
  token: string;
  via: CredentialForm;
}

/** Returns null when the request carries no credentials at all. */
export function findCredentials(request: Request, url: URL): Credentials | null | "malformed" {
  const header = request.headers.get("authorization");
  if (header !== null) {
    const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
    return match ? { token: match[1], via: "header" } : "malformed";
  }
  const query = url.searchParams.get("token");
  if (query !== null) return { token: query, via: "query" };
  const session = sessionCookieOf(request);
  return session === null ? null : { token: session, via: "cookie" };
}

/** The session cookie's value, or null when the request has none. */
export function sessionCookieOf(request: Request): string | null {
  const cookies = request.headers.get("cookie");
  if (cookies === null) return null;
  for (const pair of cookies.split(";")) {
    const at = pair.indexOf("=");
    if (at > 0 && pair.slice(0, at).trim() === SESSION_COOKIE) return pair.slice(at + 1).trim();
  }
  return null;
}
