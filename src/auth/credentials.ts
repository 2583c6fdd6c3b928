/**
 * Finding the credentials of a request: `Authorization: Bearer <token>`, or
 * the deprecated `?token=` query parameter. When both are present the header
 * wins.
 */
export interface Credentials {
  token: string;
  viaQuery: boolean;
}

/** Returns null when the request carries no credentials at all. */
export function findCredentials(request: Request, url: URL): Credentials | null | "malformed" {
  const header = request.headers.get("authorization");
  if (header !== null) {
    const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
    return match ? { token: match[1], viaQuery: false } : "malformed";
  }
  const query = url.searchParams.get("token");
  if (query !== null) return { token: query, viaQuery: true };
  return null;
}
