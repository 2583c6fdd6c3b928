/**
 * The page's cookie sessions and signed upload links on two servers sharing
 * one PostgreSQL: a session started through one instance signs requests in
 * on the other and ends on both at once; a link minted through one is
 * spent by one upload, whichever instance takes it.
 */
import { assertEquals } from "../helpers/assert.ts";
import { bearer, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { postgresAvailable } from "../helpers/postgres.ts";
import { startPostgres } from "../../scripts/lib/postgres_server.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const ignore = !postgresAvailable();

function postJson(server: TestServer, path: string, body: unknown, headers = {}) {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

Deno.test({
  name: "postgres instances: a session and an upload link work on either, and end on both",
  ignore,
  fn: async () => {
    await using postgres = await startPostgres({ durable: false });
    await using a = await startTestServer({ args: ["--database", postgres.url] });
    await using b = await startTestServer({ args: ["--database", postgres.url] });
    const { token } = await signup(a, { email: "two@example.org" });

    const started = await postJson(a, "/api/auth/session", { token }, { origin: a.url });
    assertEquals(started.status, 201);
    await started.body?.cancel();
    const cookie = started.headers.get("set-cookie")!.split(";")[0];
    const onB = await b.upload("bafksession00001", "via b", { headers: { cookie, origin: b.url } });
    assertEquals([onB.status, (await onB.json()).owner], [200, "two@example.org"]);
    const ended = await fetch(`${b.url}/api/auth/session`, {
      method: "DELETE",
      headers: { cookie, origin: b.url },
    });
    assertEquals(ended.status, 200);
    await ended.body?.cancel();
    await assertErrorAnswer(
      await a.get("/api/files", { headers: { cookie } }),
      401,
      "invalid_token",
    );

    const minted = await postJson(
      a,
      "/api/upload-links",
      { cid: "bafklinkshared01", size: 4, contentType: "text/plain" },
      bearer(token),
    );
    assertEquals(minted.status, 201);
    const path = new URL((await minted.json()).url).pathname;
    const send = (server: TestServer) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "link",
      });
    const first = await send(b);
    assertEquals([first.status, (await first.json()).owner], [200, "two@example.org"]);
    await assertErrorAnswer(await send(a), 401, "invalid_link");
  },
});
