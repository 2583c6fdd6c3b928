/**
 * --token-alg RS256 (auth/rsa_keys.ts), checked as a third party would:
 * jose's createRemoteJWKSet and jwtVerify against GET /.well-known/jwks.json,
 * before and after `main.ts rotate-key`; the key file (0600, 2048 bits);
 * every token's kid; no algorithm confusion (an HS256 token keyed with the
 * public key, `alg: none`, another RSA key under a published kid: all 401);
 * the backup carries the keys; and under the default HS256 nothing changes
 * (no kid, no public keys).
 */
import { createRemoteJWKSet, exportSPKI, generateKeyPair, jwtVerify, SignJWT } from "jose";
import type { JWK } from "jose";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { decodeToken, forgeToken } from "../helpers/jwt.ts";
import { modeOf, runMain } from "../helpers/main_process.ts";
import { errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { publishedKids, tokenStatus } from "../helpers/jwks.ts";
import { withTempDir } from "../helpers/files.ts";

const RS256 = ["--token-alg", "RS256"];

/** What a third party does: the server's published keys, and jose's verification. */
async function verifyElsewhere(server: TestServer, token: string) {
  const keys = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  const { payload, protectedHeader } = await jwtVerify(token.replace(/^pk_live_/, ""), keys, {
    algorithms: ["RS256"],
    currentDate: new Date(server.server.services.clock.now()),
  });
  return { payload, kid: protectedHeader.kid };
}

Deno.test("rs256: tokens name their kid and verify with jose against the published JWKS", async () => {
  await using server = await startTestServer({ args: RS256 });
  const { token } = await signup(server, { email: "rs@example.org" });
  const { header } = decodeToken(token);
  assertEquals([header.alg, header.typ], ["RS256", "JWT"]);
  const { payload, kid } = await verifyElsewhere(server, token);
  assertEquals([payload.email, kid], ["rs@example.org", header.kid]);
  assertEquals(await tokenStatus(server, token), "ok");
  // The operator's `token mint` signs as the server does.
  const minted = await runMain(
    [
      ..."token mint --email ops@example.org --label ci".split(" "),
      "--data-dir",
      server.dataDir,
      ...RS256,
    ],
    { dataDir: server.dataDir },
  );
  assertEquals(minted.code, 0, minted.stderr);
  const mintedToken = JSON.parse(minted.stdout).token;
  assertEquals((await verifyElsewhere(server, mintedToken)).kid, header.kid);
  assertEquals(await tokenStatus(server, mintedToken), "ok");

  const jwks = await server.get("/.well-known/jwks.json");
  assertMatch(jwks.headers.get("cache-control") ?? "", /public/);
  const { keys } = await jwks.json();
  assertEquals(keys.length, 1);
  assertEquals([keys[0].kty, keys[0].alg, keys[0].use, keys[0].kid], ["RSA", "RS256", "sig", kid]);
  assertOk(!("d" in keys[0]) && !("p" in keys[0]), "no private part is published");
  const bits = Uint8Array.fromBase64(keys[0].n, { alphabet: "base64url" }).length * 8;
  assertOk(bits >= 2048, `${bits} bits`);
  assertEquals(modeOf(`${server.dataDir}/rsa-keys.json`), "600");
});

Deno.test("rs256: rotate-key signs with a new key; the old one stays published until its tokens expire", async () => {
  const clock = new FakeClock(Date.now());
  await using server = await startTestServer({
    clock,
    args: [...RS256, "--hmac-key-reload", "1", "--token-lifetime-days", "1"],
  });
  const before = (await signup(server, { email: "before@example.org" })).token;
  const oldKid = (await verifyElsewhere(server, before)).kid;
  const rotated = await runMain([
    "rotate-key",
    "--data-dir",
    server.dataDir,
    ...RS256,
    // The server's flags: the old key stays published as long as a token lives.
    "--token-lifetime-days",
    "1",
  ], {
    dataDir: server.dataDir,
  });
  assertEquals(rotated.code, 0, rotated.stderr);
  assertMatch(rotated.stdout, /Rotated the RSA key .* tokens issued before keep working/s);
  await eventually(
    async () => (await publishedKids(server)).length === 2,
    "the server publishes the new key beside the old one",
    { timeoutMs: 5000, intervalMs: 50 },
  );
  const after = (await signup(server, { email: "after@example.org" })).token;
  const newKid = (await verifyElsewhere(server, after)).kid;
  assertOk(newKid !== oldKid, "a new kid");
  assertEquals(await publishedKids(server), [newKid, oldKid]);
  // The old token still works, here and for a verifier that fetches the keys now.
  assertEquals((await verifyElsewhere(server, before)).kid, oldKid);
  assertEquals([await tokenStatus(server, before), await tokenStatus(server, after)], ["ok", "ok"]);

  // Past the longest a token lives, the old key is no longer published.
  clock.advance(86_400_000 + 60_000);
  assertEquals(await publishedKids(server), [newKid]);
  assertEquals(await tokenStatus(server, before), "invalid_token");
});

Deno.test("rs256: no algorithm confusion: HS256 keyed with the public key, alg none, a foreign key", async () => {
  await using server = await startTestServer({ args: RS256 });
  const { token } = await signup(server, { email: "victim@example.org" });
  const { header, payload } = decodeToken(token);
  const { keys: [published] } = await (await server.get("/.well-known/jwks.json")).json();
  const publicKey = await crypto.subtle.importKey(
    "jwk",
    published as JWK,
    { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    true,
    ["verify"],
  );
  const asBytes = (text: string) => new TextEncoder().encode(text).toHex();
  const publicForms = [
    asBytes(JSON.stringify(published)),
    asBytes(await exportSPKI(publicKey)),
    Uint8Array.fromBase64(published.n, { alphabet: "base64url" }).toHex(),
  ];
  const forged = [
    ...publicForms.map((keyHex) => forgeToken({ ...header, alg: "HS256" }, payload, keyHex)),
    forgeToken({ alg: "none", typ: "JWT", kid: header.kid }, payload, null),
  ];
  // Another RSA key signing under the published kid.
  const foreign = await generateKeyPair("RS256");
  forged.push(
    "pk_live_" + await new SignJWT(payload).setProtectedHeader(header as { alg: "RS256" })
      .sign(foreign.privateKey),
  );
  for (const [i, fake] of forged.entries()) {
    assertEquals(await tokenStatus(server, fake), "invalid_token", `forgery ${i}`);
  }
  assertEquals(await tokenStatus(server, token), "ok");
});

Deno.test("rs256: the backup carries the keys; under HS256 (the default) nothing changes", async () => {
  await using server = await startTestServer({ args: RS256 });
  const { token } = await signup(server);
  await withTempDir("storage-rs256-", async (parent) => {
    const destination = `${parent}/backup`;
    const backup = await runMain(["backup", destination, "--data-dir", server.dataDir], {
      flags: ["--allow-all"],
    });
    assertEquals(backup.code, 0, backup.stderr);
    assertEquals(
      await Deno.readTextFile(`${destination}/rsa-keys.json`),
      await Deno.readTextFile(`${server.dataDir}/rsa-keys.json`),
    );
    assertEquals(modeOf(`${destination}/rsa-keys.json`), "600");
    await using restored = await startTestServer({ dataDir: destination, args: RS256 });
    assertEquals(await tokenStatus(restored, token), "ok");
  });

  await using plain = await startTestServer();
  const hs = (await signup(plain)).token;
  assertEquals(decodeToken(hs).header, { alg: "HS256", typ: "JWT" });
  const jwks = await plain.get("/.well-known/jwks.json");
  assertEquals([jwks.status, (await errorOf(jwks)).error], [404, "not_found"]);
  assertOk(!await Deno.stat(`${plain.dataDir}/rsa-keys.json`).then(() => true, () => false));
});
