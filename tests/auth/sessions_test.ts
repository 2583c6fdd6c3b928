/**
 * The web page's cookie sessions over real HTTP (auth/sessions.ts): POST
 * /api/auth/session sets an HttpOnly, Secure, SameSite=Strict __Host- cookie
 * that authenticates as its token would; a change signed in by the cookie
 * alone must come from the service's own origin (403 csrf_rejected, nothing
 * stored, nothing charged); the session ends with DELETE, with its token's
 * revocation and with its expiry; the database keeps only a hash, so a copied
 * data directory or a log signs no one in. The page's own use of it runs in
 * Chromium (tests/web/web_session_test.ts).
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { bearer, errorOf, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";

const COOKIE = "__Host-storage_session";

/** Starts a session from the server's own origin; returns the cookie header to send back. */
async function startSession(server: TestServer, token: string): Promise<string> {
  const response = await fetch(`${server.url}/api/auth/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.url },
    body: JSON.stringify({ token }),
  });
  assertEquals(response.status, 201, await response.clone().text());
  await response.body?.cancel();
  const set = response.headers.get("set-cookie")!;
  return set.split(";")[0];
}

/** An upload signed in by the cookie alone, with the given extra headers (Origin, …). */
function cookieUpload(
  server: TestServer,
  cookie: string,
  cid: string,
  headers: Record<string, string>,
): Promise<Response> {
  return server.upload(cid, `bytes of ${cid}`, { headers: { cookie, ...headers } });
}

Deno.test("session: the cookie is __Host-, HttpOnly, Secure, SameSite=Strict, and holds no token", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "cookie@example.org" });
  const response = await fetch(`${server.url}/api/auth/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.url },
    body: JSON.stringify({ token }),
  });
  assertEquals(response.status, 201);
  const body = await response.json();
  assertEquals(
    [body.signedIn, body.via, body.email, body.jti],
    [true, "cookie", "cookie@example.org", jtiOf(token)],
  );
  assertOk(!JSON.stringify(body).includes(token), "the answer holds no token");
  const set = response.headers.get("set-cookie")!;
  assertMatch(set, /^__Host-storage_session=[A-Za-z0-9_-]{43}; /);
  for (const attribute of ["Path=/", "HttpOnly", "Secure", "SameSite=Strict"]) {
    assertOk(set.split("; ").includes(attribute), `${attribute} in ${set}`);
  }
  assertOk(!/Domain=/i.test(set) && !set.includes(token.slice(8, 40)), set);
});

Deno.test("session: the cookie authenticates as its token, reads from anywhere, changes from the page", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "same@example.org" });
  const cookie = await startSession(server, token);

  // A read: as the token would (GET needs no origin).
  const who = await server.get("/api/auth/session", { headers: { cookie } });
  assertEquals((await who.json()).email, "same@example.org");
  const files = await server.get("/api/files", { headers: { cookie } });
  assertEquals(files.status, 200);
  await files.body?.cancel();

  // A change from the page (Origin, or Sec-Fetch-Site without one): the token's upload.
  const fromPage = await cookieUpload(server, cookie, "bafkcookie0001", { origin: server.url });
  assertEquals(fromPage.status, 200);
  assertEquals((await fromPage.json()).owner, "same@example.org");
  const fetchSite = await cookieUpload(server, cookie, "bafkcookie0002", {
    "sec-fetch-site": "same-origin",
  });
  assertEquals([fetchSite.status, (await fetchSite.json()).owner], [200, "same@example.org"]);
});

Deno.test("session: a change by the cookie from another origin is 403 csrf_rejected, nothing stored or charged", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "victim@example.org" });
  const cookie = await startSession(server, token);
  const port = Number(new URL(server.url).port);
  const refusals: Record<string, string>[] = [
    { origin: "https://evil.example" },
    // Same site, other origin: SameSite sends the cookie; the origin rule refuses it.
    { origin: `http://127.0.0.1:${port + 1}` },
    { "sec-fetch-site": "same-site" },
    {}, // neither header: nothing shows it came from the page
  ];
  for (const [i, headers] of refusals.entries()) {
    const cid = `bafkcsrf000${i}`;
    const refused = await cookieUpload(server, cookie, cid, headers);
    const error = await errorOf(refused);
    assertEquals([refused.status, error.error], [403, "csrf_rejected"], JSON.stringify(headers));
    assertMatch(error.message, /Authorization header/);
    assertEquals((await server.get(`/p/${cid}`)).status, 404);
  }
  const usage = await server.get("/api/usage", { headers: bearer(token) });
  const days = (await usage.json()).days as { uploads: number }[];
  assertEquals(days.reduce((sum, day) => sum + day.uploads, 0), 0, "nothing charged");
  // Other changes too, and signing in or out from elsewhere.
  const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: { cookie, origin: "https://evil.example", "content-type": "application/json" },
    body: JSON.stringify({ jti: jtiOf(token) }),
  });
  assertEquals([revoke.status, (await errorOf(revoke)).error], [403, "csrf_rejected"]);
  for (const method of ["POST", "DELETE"]) {
    const answer = await fetch(`${server.url}/api/auth/session`, {
      method,
      headers: { cookie, origin: "https://evil.example", "content-type": "application/json" },
      body: method === "POST" ? JSON.stringify({ token }) : undefined,
    });
    assertEquals([answer.status, (await errorOf(answer)).error], [403, "csrf_rejected"], method);
  }
  // A bearer token is not a cookie: other origins may use it (CORS clients do).
  const withToken = await server.upload("bafkbearer0001", "x", {
    headers: { ...bearer(token), origin: "https://elsewhere.example" },
  });
  assertEquals(withToken.status, 200);
  await withToken.body?.cancel();
});

Deno.test("session: it ends with DELETE, with its token's revocation and with its expiry", async () => {
  const clock = new FakeClock(Date.now());
  await using server = await startTestServer({ clock, args: ["--token-lifetime-days", "1"] });
  const { token } = await signup(server, { email: "ends@example.org" });
  const ended = await startSession(server, token);
  const signOut = await fetch(`${server.url}/api/auth/session`, {
    method: "DELETE",
    headers: { cookie: ended, origin: server.url },
  });
  assertEquals([signOut.status, (await signOut.json()).signedIn], [200, false]);
  assertMatch(signOut.headers.get("set-cookie")!, /^__Host-storage_session=; .*Max-Age=0/);
  const afterSignOut = await server.get("/api/files", { headers: { cookie: ended } });
  assertEquals([afterSignOut.status, (await errorOf(afterSignOut)).error], [401, "invalid_token"]);
  // The token itself still works: signing out of the page is not revoking.
  const stillValid = await server.get("/api/files", { headers: bearer(token) });
  assertEquals(stillValid.status, 200);
  await stillValid.body?.cancel();

  const expiring = await startSession(server, token);
  clock.advance(86_400_000 + 1000);
  const expired = await server.get("/api/files", { headers: { cookie: expiring } });
  assertEquals([expired.status, (await errorOf(expired)).error], [401, "invalid_token"]);

  clock.set(new Date().toISOString());
  const { token: second } = await signup(server, { email: "revoked@example.org" });
  const revokedSession = await startSession(server, second);
  const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: { ...bearer(second), "content-type": "application/json" },
    body: JSON.stringify({ jti: jtiOf(second) }),
  });
  assertEquals(revoke.status, 200);
  await revoke.body?.cancel();
  const afterRevoke = await server.get("/api/files", { headers: { cookie: revokedSession } });
  assertEquals([afterRevoke.status, (await errorOf(afterRevoke)).error], [401, "revoked_token"]);
  // A revoked or unknown token starts no session.
  for (const bad of [second, "pk_live_a.b.c"]) {
    const refused = await fetch(`${server.url}/api/auth/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.url },
      body: JSON.stringify({ token: bad }),
    });
    assertEquals(refused.status, 401);
    assertEquals(refused.headers.get("set-cookie"), null);
    await refused.body?.cancel();
  }
});

Deno.test("session: the data directory and the log hold only the cookie's hash, which signs no one in", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "leak@example.org" });
  const cookie = await startSession(server, token);
  const secret = cookie.slice(COOKIE.length + 1);
  const files = await server.get("/api/files", { headers: { cookie } });
  assertEquals(files.status, 200);
  await files.body?.cancel();

  const db = new DatabaseSync(`${server.dataDir}/storage.db`, { readOnly: true });
  const rows = db.prepare("SELECT id_hash, jti FROM sessions").all() as {
    id_hash: string;
    jti: string;
  }[];
  db.close();
  assertEquals(rows.length, 1);
  assertEquals(rows[0].jti, jtiOf(token));
  assertOk(rows[0].id_hash !== secret, "the row is not the secret");
  // Nowhere in the directory's files, nor in any log line.
  for await (const entry of Deno.readDir(server.dataDir)) {
    if (!entry.isFile) continue;
    const text = new TextDecoder("latin1").decode(
      await Deno.readFile(`${server.dataDir}/${entry.name}`),
    );
    assertOk(!text.includes(secret), `the secret is in ${entry.name}`);
  }
  assertOk(!JSON.stringify(server.logs).includes(secret), "the secret is in the log");
  // What was leaked, sent back as a cookie, is no session.
  const replayed = await server.get("/api/files", {
    headers: { cookie: `${COOKIE}=${rows[0].id_hash}` },
  });
  assertEquals([replayed.status, (await errorOf(replayed)).error], [401, "invalid_token"]);
});

Deno.test("query token: --query-token off refuses ?token= with 401 naming the header; on (default) takes it", async () => {
  await using off = await startTestServer({ args: ["--query-token", "off"] });
  const { token } = await signup(off);
  const refused = await off.get(`/api/files?token=${token}`);
  const error = await errorOf(refused);
  assertEquals([refused.status, error.error], [401, "invalid_token"]);
  assertMatch(error.message, /Authorization: Bearer <token>/);
  const header = await off.get("/api/files", { headers: bearer(token) });
  assertEquals(header.status, 200);
  await header.body?.cancel();

  await using on = await startTestServer();
  const { token: onToken } = await signup(on);
  const taken = await on.get(`/api/files?token=${onToken}`);
  assertEquals(taken.status, 200);
  await taken.body?.cancel();
});
