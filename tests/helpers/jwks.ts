/**
 * What the RS256 tests ask a server, whether it keeps its keys in a data
 * directory or in PostgreSQL: the kids it publishes, and how it answers a
 * token ("ok", or the error code).
 */
import { bearer, errorOf } from "./server.ts";
import type { TestServer } from "./server.ts";

/** GET /api/files with the token: "ok", or the error code of the answer. */
export async function tokenStatus(server: TestServer, token: string): Promise<string> {
  const response = await server.get("/api/files", { headers: bearer(token) });
  return response.status === 200
    ? (await response.body?.cancel(), "ok")
    : (await errorOf(response)).error;
}

/** The kids of GET /.well-known/jwks.json, in the order published. */
export async function publishedKids(server: TestServer): Promise<string[]> {
  const jwks = await (await server.get("/.well-known/jwks.json")).json();
  return jwks.keys.map((key: { kid: string }) => key.kid);
}
