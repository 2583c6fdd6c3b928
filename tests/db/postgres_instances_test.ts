/**
 * Two servers on one PostgreSQL, over HTTP: a token signed by one instance
 * works on the other (one shared key), and a revocation made through one is
 * refused by the other on its very next request (no cache in between).
 */
import { assertEquals } from "../helpers/assert.ts";
import { bearer, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import { postgresAvailable } from "../helpers/postgres.ts";
import { startPostgres } from "../../scripts/lib/postgres_server.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const ignore = !postgresAvailable();

Deno.test({
  name:
    "postgres instances: a token from one works on the other; a revocation reaches both at once",
  ignore,
  fn: async () => {
    await using postgres = await startPostgres({ durable: false });
    await using a = await startTestServer({ args: ["--database", postgres.url] });
    await using b = await startTestServer({ args: ["--database", postgres.url] });
    const { token } = await signup(a);
    const stored = await b.upload("bafkshared000001", "from b", { headers: bearer(token) });
    assertEquals(stored.status, 200);
    const files = await (await a.get("/api/files", { headers: bearer(token) })).json();
    assertEquals(files.files.length, 1, "the deal made through b is listed by a");
    const revoked = await fetch(`${b.url}/api/tokens/revoke`, {
      method: "POST",
      headers: { ...bearer(token), "content-type": "application/json" },
      body: JSON.stringify({ jti: jtiOf(token) }),
    });
    assertEquals(revoked.status, 200);
    await revoked.body?.cancel();
    const refused = await a.upload("bafkshared000002", "after", { headers: bearer(token) });
    await assertErrorAnswer(refused, 401, "revoked_token");
  },
});
