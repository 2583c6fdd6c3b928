/**
 * With a leaked HMAC key anyone can sign a token, so a valid signature is not
 * enough: the claims must equal what the service recorded when it issued the
 * jti, and a token may not be issued in the future.
 */
import { assertEquals } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { decodeToken, forgeToken } from "../helpers/jwt.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";

const HEADER = { alg: "HS256", typ: "JWT" };

async function leakedKey(server: TestServer): Promise<string> {
  return await Deno.readTextFile(`${server.dataDir}/hmac.key`);
}

async function statusWith(server: TestServer, token: string) {
  const response = await server.get("/api/tokens", { headers: bearer(token) });
  if (response.status === 200) {
    await response.body?.cancel();
    return { status: 200, error: null, message: null };
  }
  const body = await errorOf(response);
  return { status: response.status, error: body.error, message: body.message };
}

Deno.test("tokens: re-signed claims that differ from the issued record are 401", async () => {
  await using server = await startTestServer();
  const alice = await signup(server, { email: "alice@example.org", scopes: ["get", "list"] });
  const mallory = await signup(server, { email: "mallory@example.org", quotaMb: 10 });
  const key = await leakedKey(server);
  const genuine = decodeToken(mallory.token).payload;
  // The genuine tokens work, and a token re-signed with identical claims is the same token.
  assertEquals((await statusWith(server, mallory.token)).status, 200);
  assertEquals((await statusWith(server, forgeToken(HEADER, genuine, key))).status, 200);

  const altered: [string, Record<string, unknown>][] = [
    ["another user's sub", { sub: alice.userId }],
    ["another user's e-mail", { email: "alice@example.org" }],
    ["a raised quota", { quotaMb: 1024 }],
    ["fewer scopes", { scopes: ["put"] }],
    ["a later expiry", { exp: (genuine.exp as number) + 86_400 }],
    ["an earlier issue time", { iat: (genuine.iat as number) - 10 }],
    ["alice's jti", { jti: decodeToken(alice.token).payload.jti }],
  ];
  for (const [what, change] of altered) {
    const result = await statusWith(server, forgeToken(HEADER, { ...genuine, ...change }, key));
    assertEquals([what, result.status, result.error], [what, 401, "invalid_token"]);
  }
  // A jti this service never issued.
  const unknown = { ...genuine, jti: crypto.randomUUID() };
  assertEquals((await statusWith(server, forgeToken(HEADER, unknown, key))).status, 401);
});

Deno.test("tokens: an iat more than a minute ahead is 401, a few seconds of skew is not", async () => {
  const clock = new FakeClock("2026-11-21T12:00:00Z");
  await using server = await startTestServer({ clock });
  const key = await leakedKey(server);
  const issued = await signup(server);
  const payload = decodeToken(issued.token).payload;
  const aYearAhead = forgeToken(
    HEADER,
    { ...payload, iat: (payload.iat as number) + 31_536_000 },
    key,
  );
  const result = await statusWith(server, aYearAhead);
  assertEquals([result.status, result.error], [401, "invalid_token"]);
  assertEquals(result.message, "Token is issued in the future");
  // Issued by a server whose clock ran 30 s ahead of this one's: still accepted.
  clock.advance(-30_000);
  assertEquals((await statusWith(server, issued.token)).status, 200);
});

/** The other spellings base64url allows for the same bytes: the last character's unused bits set. */
function respellings(part: string): string[] {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const unusedBits = { 0: 0, 2: 4, 3: 2 }[part.length % 4] ?? 0;
  const last = alphabet.indexOf(part.at(-1)!);
  const spellings = [];
  for (let low = 1; low < 1 << unusedBits; low++) {
    spellings.push(part.slice(0, -1) + alphabet[last | low]);
  }
  return spellings;
}

Deno.test("tokens: each part has one spelling; a respelled or padded token is 401", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const [header, payload, signature] = token.slice("pk_live_".length).split(".");
  const variants = [
    ...respellings(signature).map((s) => `${header}.${payload}.${s}`),
    ...respellings(payload).map((p) => `${header}.${p}.${signature}`),
    ...respellings(header).map((h) => `${h}.${payload}.${signature}`),
    `${header}.${payload}.${signature}=`,
    `${header}.${payload}=.${signature}`,
  ].map((jwt) => `pk_live_${jwt}`);
  // The signature (32 bytes, 43 characters) has 3 other spellings; the JSON parts as they fall.
  assertEquals(variants.length >= 5, true, String(variants.length));
  for (const variant of variants) {
    const result = await statusWith(server, variant);
    assertEquals([variant, result.status, result.error], [variant, 401, "invalid_token"]);
  }
  assertEquals((await statusWith(server, token)).status, 200);
});

Deno.test("tokens: a validly signed token whose exp is past year 9999 is 401, never 500", async () => {
  await using server = await startTestServer();
  const key = await leakedKey(server);
  const payload = decodeToken((await signup(server)).token).payload;
  for (const exp of [253_402_300_800, 8_640_000_000_001, Number.MAX_SAFE_INTEGER]) {
    const result = await statusWith(server, forgeToken(HEADER, { ...payload, exp }, key));
    assertEquals([exp, result.status, result.error], [exp, 401, "invalid_token"]);
  }
});
