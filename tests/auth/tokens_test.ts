/** Signup, the token format, and every way a token can be refused. */
import { assertEquals, assertMatch, assertNotEquals, assertOk } from "../helpers/assert.ts";
import { bearer, errorOf, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { FakeClock } from "../helpers/clock.ts";
import { base64urlEncode, decodeToken, forgeToken, hmacSha256 } from "../helpers/jwt.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const DAY = 86_400;

async function keyHexOf(server: TestServer): Promise<string> {
  return (await Deno.readTextFile(`${server.dataDir}/hmac.key`)).trim();
}

function postJson(server: TestServer, path: string, body: unknown, headers = {}) {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function tokenCount(server: TestServer): number {
  return Number(
    (server.server.db.prepare("SELECT count(*) AS n FROM tokens").get() as { n: number }).n,
  );
}

Deno.test("signup: 201 with the signup result, and a token whose payload anyone can read", async () => {
  const clock = new FakeClock("2026-11-21T12:00:00Z");
  await using server = await startTestServer({ clock });
  const response = await postJson(server, "/api/auth/signup", {
    email: "  Alice@Example.ORG ",
    label: "laptop",
  });
  assertEquals(response.status, 201);
  assertEquals(response.headers.get("content-type"), "application/json");
  const result = await response.json();
  assertEquals(Object.keys(result).sort(), [
    "email",
    "expiresAt",
    "jti",
    "quotaMb",
    "scopes",
    "token",
    "userId",
  ]);
  assertMatch(result.token, /^pk_live_[\w-]+\.[\w-]+\.[\w-]+$/);
  assertEquals(result.email, "alice@example.org");
  assertEquals(result.scopes, ["put", "get", "list", "pin"]);
  assertEquals(result.quotaMb, 1024);
  assertEquals(result.expiresAt, "2027-02-19T12:00:00Z");

  const { header, payload } = decodeToken(result.token);
  assertEquals(header, { alg: "HS256", typ: "JWT" });
  assertEquals(Object.keys(payload).sort(), [
    "email",
    "exp",
    "iat",
    "jti",
    "quotaMb",
    "scopes",
    "sub",
  ]);
  assertEquals(payload.sub, result.userId);
  assertEquals(payload.email, "alice@example.org");
  assertEquals(payload.scopes, ["put", "get", "list", "pin"]);
  assertEquals(payload.quotaMb, 1024);
  assertEquals(payload.iat, Date.parse("2026-11-21T12:00:00Z") / 1000);
  assertEquals(payload.exp, (payload.iat as number) + 90 * DAY);
  assertMatch(payload.jti as string, /^[0-9a-f-]{36}$/);
});

Deno.test("signup: the signature verifies with an independent HMAC-SHA256 over the key file", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const { signature, signingInput } = decodeToken(token);
  assertEquals(hmacSha256(await keyHexOf(server), signingInput), signature);
  const info = await Deno.stat(`${server.dataDir}/hmac.key`);
  assertEquals(info.mode! & 0o777, 0o600);
  assertEquals((await keyHexOf(server)).length, 64);
});

Deno.test("signup: the same e-mail always gets the same userId and a new token", async () => {
  await using server = await startTestServer();
  const first = await signup(server, { email: "bob@example.org" });
  const second = await signup(server, { email: "BOB@example.org " });
  const other = await signup(server, { email: "carol@example.org" });
  assertEquals(first.userId, second.userId);
  assertNotEquals(first.token, second.token);
  assertNotEquals(jtiOf(first.token), jtiOf(second.token));
  assertNotEquals(first.userId, other.userId);
  assertOk(!first.userId.includes("bob"), "the user id does not reveal the e-mail");
});

Deno.test("signup: chosen scopes and quota are carried in the token", async () => {
  await using server = await startTestServer();
  const result = await signup(server, { scopes: ["put", "put"], quotaMb: 10 });
  assertEquals(result.scopes, ["put"]);
  assertEquals(result.quotaMb, 10);
  assertEquals(decodeToken(result.token).payload.scopes, ["put"]);
});

const badSignups: [string, unknown, number, string][] = [
  ["malformed JSON", "{nope", 400, "invalid_json"],
  ["a JSON array", "[]", 400, "invalid_json"],
  ["a missing e-mail", { label: "x" }, 400, "invalid_email"],
  ["an e-mail without @", { email: "nobody", label: "x" }, 400, "invalid_email"],
  ["an e-mail that is a number", { email: 5, label: "x" }, 400, "invalid_email"],
  ["a missing label", { email: "a@b.co" }, 400, "invalid_label"],
  ["an empty label", { email: "a@b.co", label: "" }, 400, "invalid_label"],
  ["a 65-character label", { email: "a@b.co", label: "x".repeat(65) }, 400, "invalid_label"],
  ["an empty scope list", { email: "a@b.co", label: "x", scopes: [] }, 400, "invalid_scopes"],
  ["an unknown scope", { email: "a@b.co", label: "x", scopes: ["admin"] }, 400, "invalid_scopes"],
  ["scopes as a string", { email: "a@b.co", label: "x", scopes: "put" }, 400, "invalid_scopes"],
  ["a zero quota", { email: "a@b.co", label: "x", quotaMb: 0 }, 400, "invalid_quota"],
  [
    "a quota over the tier cap",
    { email: "a@b.co", label: "x", quotaMb: 1025 },
    400,
    "invalid_quota",
  ],
  ["a fractional quota", { email: "a@b.co", label: "x", quotaMb: 1.5 }, 400, "invalid_quota"],
  ["a quota as a string", { email: "a@b.co", label: "x", quotaMb: "10" }, 400, "invalid_quota"],
  [
    "a body over 64 KiB",
    { email: "a@b.co", label: "x", pad: "x".repeat(70_000) },
    413,
    "too_large",
  ],
];

for (const [what, body, status, code] of badSignups) {
  Deno.test(`signup: ${what} is ${status} ${code} and issues nothing`, async () => {
    await using server = await startTestServer();
    const response = await postJson(server, "/api/auth/signup", body);
    assertEquals(response.status, status);
    assertEquals(response.headers.get("content-type"), "application/json");
    assertEquals((await errorOf(response)).error, code);
    assertEquals(tokenCount(server), 0);
  });
}

Deno.test("signup: limited per IP per hour with Retry-After; rejected input does not count", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({ clock, args: ["--signup-limit", "2"] });
  await (await postJson(server, "/api/auth/signup", { email: "bad" })).body?.cancel();
  await signup(server);
  clock.advance(600_000);
  await signup(server);
  const refused = await postJson(server, "/api/auth/signup", { email: "a@b.co", label: "x" });
  await assertErrorAnswer(refused, 429, "rate_limited");
  assertEquals(refused.headers.get("retry-after"), "3000");
  clock.advance(3_000_000);
  await signup(server);
});

Deno.test("signup: with storage offline no token is issued", async () => {
  await using server = await startTestServer({ args: ["--data-dir", ""] });
  const response = await postJson(server, "/api/auth/signup", { email: "a@b.co", label: "x" });
  await assertErrorAnswer(response, 503, "storage_offline");
});

interface Attack {
  name: string;
  token: (server: TestServer, genuine: string) => Promise<string> | string;
  error: string;
}

const attacks: Attack[] = [
  {
    name: "a tampered payload (quota raised, signature kept)",
    token: (_s, genuine) => {
      const [h, , sig] = genuine.replace("pk_live_", "").split(".");
      const payload = { ...decodeToken(genuine).payload, quotaMb: 999999 };
      return `pk_live_${h}.${base64urlEncode(JSON.stringify(payload))}.${sig}`;
    },
    error: "invalid_token",
  },
  {
    name: "a token signed with another key",
    token: (_s, genuine) =>
      forgeToken({ alg: "HS256", typ: "JWT" }, decodeToken(genuine).payload, "ab".repeat(32)),
    error: "invalid_token",
  },
  {
    name: "alg: none",
    token: (_s, genuine) =>
      forgeToken({ alg: "none", typ: "JWT" }, decodeToken(genuine).payload, null),
    error: "invalid_token",
  },
  {
    name: "alg: RS256 signed with the HMAC key as if it were a public key",
    token: async (s, genuine) =>
      forgeToken({ alg: "RS256", typ: "JWT" }, decodeToken(genuine).payload, await keyHexOf(s)),
    error: "invalid_token",
  },
  {
    name: "an expired token",
    token: async (s, genuine) => {
      const payload = { ...decodeToken(genuine).payload, exp: Math.floor(Date.now() / 1000) - 1 };
      return forgeToken({ alg: "HS256", typ: "JWT" }, payload, await keyHexOf(s));
    },
    error: "invalid_token",
  },
  {
    name: "a token without the pk_live_ prefix",
    token: (_s, genuine) => genuine.replace("pk_live_", ""),
    error: "invalid_token",
  },
  {
    name: "a test-mode prefix",
    token: (_s, genuine) => genuine.replace("pk_live_", "pk_test_"),
    error: "invalid_token",
  },
  {
    name: "a correctly signed token this service never issued",
    token: async (s, genuine) => {
      const payload = { ...decodeToken(genuine).payload, jti: crypto.randomUUID() };
      return forgeToken({ alg: "HS256", typ: "JWT" }, payload, await keyHexOf(s));
    },
    error: "invalid_token",
  },
  {
    name: "a correctly signed token with an extra claim",
    token: async (s, genuine) => {
      const payload = { ...decodeToken(genuine).payload, admin: true };
      return forgeToken({ alg: "HS256", typ: "JWT" }, payload, await keyHexOf(s));
    },
    error: "invalid_token",
  },
  {
    name: "a correctly signed token with scopes of the wrong type",
    token: async (s, genuine) => {
      const payload = { ...decodeToken(genuine).payload, scopes: "put get" };
      return forgeToken({ alg: "HS256", typ: "JWT" }, payload, await keyHexOf(s));
    },
    error: "invalid_token",
  },
  {
    name: "a huge token",
    token: () => "pk_live_" + "a".repeat(20_000),
    error: "invalid_token",
  },
  {
    name: "a revoked token",
    token: async (s, genuine) => {
      const revoke = await postJson(
        s,
        "/api/tokens/revoke",
        { jti: jtiOf(genuine) },
        bearer(genuine),
      );
      assertEquals(revoke.status, 200);
      await revoke.body?.cancel();
      return genuine;
    },
    error: "revoked_token",
  },
];

for (const attack of attacks) {
  Deno.test(`tokens: ${attack.name} is 401 ${attack.error}`, async () => {
    await using server = await startTestServer();
    const genuine = (await signup(server)).token;
    const token = await attack.token(server, genuine);
    const response = await server.upload("bafkattack0001", "x", { headers: bearer(token) });
    assertEquals(response.status, 401);
    assertEquals(response.headers.get("content-type"), "application/json");
    assertEquals(response.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
    assertEquals((await errorOf(response)).error, attack.error);
    const revoke = await postJson(server, "/api/tokens/revoke", { jti: "x" }, bearer(token));
    assertEquals(revoke.status, 401, "refused on every authenticated endpoint");
    await revoke.body?.cancel();
  });
}

Deno.test("tokens: a genuine token still works after the attacks above are refused", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const response = await server.upload("bafkgenuine001", "x", { headers: bearer(token) });
  assertEquals(response.status, 200);
  await response.body?.cancel();
});

Deno.test("tokens: expiry is enforced at request time (injected clock)", async () => {
  const clock = new FakeClock("2026-11-21T12:00:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server);
  const ok = await server.upload("bafkexpiry0001", "x", { headers: bearer(token) });
  assertEquals(ok.status, 200);
  await ok.body?.cancel();
  clock.advance(90 * DAY * 1000);
  const expired = await server.upload("bafkexpiry0002", "x", { headers: bearer(token) });
  await assertErrorAnswer(expired, 401, "invalid_token");
});

Deno.test("tokens: a token without the put scope is 403 insufficient_scope on upload", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { scopes: ["get", "list"] });
  const response = await server.upload("bafknoputscope", "x", { headers: bearer(token) });
  await assertErrorAnswer(response, 403, "insufficient_scope");
  assertMatch(response.headers.get("www-authenticate")!, /insufficient_scope/);
});

Deno.test("tokens: a malformed Authorization header is 401, never a 500", async () => {
  await using server = await startTestServer();
  for (const header of ["Bearer", "Bearer ", "Bearer a b", "Token abc", "bearer\tx", "Bearer ÿÿ"]) {
    const response = await server.upload("bafkmalformed1", "x", {
      headers: { authorization: header },
    });
    assertEquals(response.status, 401, header);
    assertEquals((await errorOf(response)).error, "invalid_token");
  }
});

Deno.test("tokens: ?token= works but is marked deprecated; the header wins over it", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "query@example.org" });
  const viaQuery = await fetch(`${server.url}/api/upload?cid=bafkquerytoken1&token=${token}`, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "x",
  });
  assertEquals(viaQuery.status, 200);
  assertEquals((await viaQuery.json()).owner, "query@example.org");
  assertEquals(viaQuery.headers.get("deprecation"), "@1767225600");
  assertEquals(
    viaQuery.headers.get("link"),
    `<${server.url}/docs/deprecations>; rel="deprecation"; type="application/json"`,
  );
  const docs = await server.get("/docs/deprecations");
  assertEquals(docs.status, 200);
  assertMatch(JSON.stringify(await docs.json()), /Authorization: Bearer/);

  const both = await fetch(`${server.url}/api/upload?cid=bafkquerytoken2&token=garbage`, {
    method: "POST",
    headers: { "content-type": "text/plain", ...bearer(token) },
    body: "x",
  });
  assertEquals(both.status, 200);
  assertEquals(both.headers.get("deprecation"), null);
  await both.body?.cancel();
});
