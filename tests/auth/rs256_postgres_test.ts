/**
 * --token-alg RS256 with --database (db/postgres/rsa_keys.ts), checked as a
 * third party would (jose's createRemoteJWKSet and jwtVerify against each
 * instance's /.well-known/jwks.json): two instances on one PostgreSQL
 * database sign with the same key and verify each other's tokens; a
 * `rotate-key --database` is published by both at once, the old kid kept
 * (and `token mint --database` signs as they do);
 * `migrate` carries a data directory's RSA keys into the database, so its
 * tokens keep working there; `backup` writes the database's keys into the
 * standalone copy, so they keep working there too.
 */
import { calculateJwkThumbprint, createRemoteJWKSet, jwtVerify } from "jose";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { decodeToken } from "../helpers/jwt.ts";
import { modeOf, runMain } from "../helpers/main_process.ts";
import { postgresAvailable, postgresClient, postgresForTests } from "../helpers/postgres.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { withTempDir } from "../helpers/files.ts";
import { publishedKids, tokenStatus } from "../helpers/jwks.ts";

const ignore = !postgresAvailable();
const RS256 = ["--token-alg", "RS256"];
const NETWORK = ["--allow-net", "--allow-env=STORAGE_*,PG*"];

/** jose against the instance's published keys, as a verifier elsewhere does. */
async function verifyAt(server: TestServer, token: string): Promise<string | undefined> {
  const keys = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  const { protectedHeader } = await jwtVerify(token.replace(/^pk_live_/, ""), keys, {
    algorithms: ["RS256"],
  });
  return protectedHeader.kid;
}

Deno.test({
  name: "rs256 postgres: two instances share the keys; a rotation is published by both",
  ignore,
  fn: async () => {
    await using database = await postgresForTests();
    // A long reload: a rotation must reach them through the unknown kid and the JWKS request.
    const args = ["--database", database.url, ...RS256, "--hmac-key-reload", "3600"];
    await using a = await startTestServer({ args: [...args, "--token-lifetime-days", "1"] });
    await using b = await startTestServer({ args });
    const fromA = (await signup(a, { email: "a@example.org" })).token;
    const fromB = (await signup(b, { email: "b@example.org" })).token;
    const kid = decodeToken(fromA).header.kid;
    assertEquals(decodeToken(fromB).header.kid, kid, "one signing key for both");
    for (const server of [a, b]) {
      assertEquals(await publishedKids(server), [kid]);
      for (const token of [fromA, fromB]) {
        assertEquals(await tokenStatus(server, token), "ok");
        assertEquals(await verifyAt(server, token), kid);
      }
    }
    // The operator's `token mint --database` signs with the same key.
    const minted = await runMain(
      [
        ..."token mint --email ops@example.org --label ci".split(" "),
        ...["--database", database.url, ...RS256],
      ],
      { flags: NETWORK },
    );
    assertEquals(minted.code, 0, minted.stderr);
    const mintedToken = JSON.parse(minted.stdout).token;
    assertEquals(decodeToken(mintedToken).header.kid, kid);
    assertEquals([await tokenStatus(a, mintedToken), await tokenStatus(b, mintedToken)], [
      "ok",
      "ok",
    ]);
    // The private half stays in the database, not in either data directory.
    for (const server of [a, b]) {
      assertOk(!await Deno.stat(`${server.dataDir}/rsa-keys.json`).then(() => true, () => false));
    }

    const rotated = await runMain(
      ["rotate-key", "--database", database.url, ...RS256, "--token-lifetime-days", "1"],
      { flags: NETWORK },
    );
    assertEquals(rotated.code, 0, rotated.stderr);
    assertMatch(rotated.stdout, /Rotated the RSA key in the database at .*Every instance picks/s);
    await using sql = postgresClient(database.url);
    const rows = await sql`SELECT kid, retires_at, private_jwk IS NOT NULL AS private
      FROM rsa_keys ORDER BY retires_at IS NOT NULL`;
    const newKid = rows[0].kid as string;
    assertEquals(rows.map((row) => [row.kid, row.private]), [[newKid, true], [kid, false]]);
    assertOk(rows[1].retires_at !== null, "the old key retires when its last token expires");
    // Both publish the new key beside the old one at once (the request for the keys reads them).
    assertEquals(await publishedKids(a), [newKid, kid]);
    assertEquals(await publishedKids(b), [newKid, kid]);

    // A token signed through A with the new key (A sees it first: its reload is an hour, so
    // it learns the key from its own JWKS request above) verifies on B and against B's keys.
    const after = (await signup(a, { email: "after@example.org" })).token;
    assertEquals(decodeToken(after).header.kid, newKid);
    for (const server of [a, b]) {
      assertEquals(await verifyAt(server, after), newKid);
      assertEquals(await verifyAt(server, fromB), kid, "the old kid is kept");
      for (const token of [fromA, fromB, after]) {
        assertEquals(await tokenStatus(server, token), "ok");
      }
    }
  },
});

/** Rotates the database's keys as rotate-key does, in this process: a new signing key. */
async function rotateInDatabase(url: string): Promise<string> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      hash: "SHA-256",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
    },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const { n, e } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const publicJwk = { kty: "RSA", n, e };
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  await using sql = postgresClient(url);
  await sql.begin(async (tx) => {
    await tx`UPDATE rsa_keys SET private_jwk = NULL, retires_at = ${
      new Date(Date.now() + 86_400_000).toISOString()
    } WHERE retires_at IS NULL`;
    await tx`INSERT INTO rsa_keys (kid, created_at, public_jwk, private_jwk) VALUES (${kid},
      ${new Date().toISOString()}, ${JSON.stringify(publicJwk)}, ${JSON.stringify(privateJwk)})`;
  });
  return kid;
}

Deno.test({
  name:
    "rs256 postgres: a token of a key rotated in elsewhere is accepted at once, however recent the last read",
  ignore,
  fn: async () => {
    await using database = await postgresForTests();
    const args = ["--database", database.url, ...RS256, "--hmac-key-reload", "3600"];
    await using a = await startTestServer({ args });
    await using b = await startTestServer({ args });
    const before = (await signup(a)).token;
    // B has just read the keys (its JWKS); the rotation lands right after.
    await publishedKids(b);
    const newKid = await rotateInDatabase(database.url);
    assertEquals((await publishedKids(a))[0], newKid);
    const after = (await signup(a, { email: "new@example.org" })).token;
    assertEquals(decodeToken(after).header.kid, newKid);
    // The unknown kid makes B read the keys again, not fail because it read them a moment ago.
    assertEquals(await tokenStatus(b, after), "ok");
    assertEquals(await tokenStatus(b, before), "ok");
  },
});

Deno.test({
  name: "rs256 postgres: migrate carries a data directory's keys; backup brings them back",
  ignore,
  fn: async () => {
    await using database = await postgresForTests();
    await withTempDir("storage-rs256-pg-", async (root) => {
      const [source, target, copy] = ["source", "target", "copy"].map((dir) => `${root}/${dir}`);
      let token: string;
      let kid: string;
      {
        await using alone = await startTestServer({ dataDir: source, args: RS256 });
        token = (await signup(alone, { email: "moved@example.org" })).token;
        kid = (await publishedKids(alone))[0];
      }
      const migrated = await runMain(
        ["migrate", "--from-data-dir", source, "--database", database.url, "--data-dir", target],
        { flags: [...NETWORK, `--allow-read=${source},${target}`, `--allow-write=${target}`] },
      );
      assertEquals(migrated.code, 0, migrated.stderr);
      const summary = JSON.parse(migrated.stdout);
      assertEquals([summary.rsaKeys, summary.warnings], ["adopted", []]);
      {
        await using shared = await startTestServer({
          dataDir: target,
          args: ["--database", database.url, ...RS256],
        });
        assertEquals(await tokenStatus(shared, token), "ok");
        assertEquals(await verifyAt(shared, token), kid);
        assertEquals(await publishedKids(shared), [kid]);
      }
      // A second run keeps the database's keys (the same ones): no warning.
      const again = await runMain(
        ["migrate", "--from-data-dir", source, "--database", database.url, "--data-dir", target],
        { flags: [...NETWORK, `--allow-read=${source},${target}`, `--allow-write=${target}`] },
      );
      assertEquals(again.code, 0, again.stderr);
      assertEquals([JSON.parse(again.stdout).rsaKeys, JSON.parse(again.stdout).warnings], [
        "kept",
        [],
      ]);

      const backup = await runMain(
        ["backup", copy, "--database", database.url, "--data-dir", target],
        { flags: [...NETWORK, `--allow-read=${target},${copy}`, `--allow-write=${copy}`] },
      );
      assertEquals(backup.code, 0, backup.stderr);
      assertEquals(JSON.parse(backup.stdout).rsaKeys, true);
      assertEquals(modeOf(`${copy}/rsa-keys.json`), "600");
      await using restored = await startTestServer({ dataDir: copy, args: RS256 });
      assertEquals(await tokenStatus(restored, token), "ok");
      assertEquals(await verifyAt(restored, token), kid);
    });
  },
});

Deno.test({
  name: "rs256 postgres: instances starting at once on an empty database make one key",
  ignore,
  fn: async () => {
    await using database = await postgresForTests();
    const args = ["--database", database.url, ...RS256];
    const started = await Promise.all([1, 2, 3].map(() => startTestServer({ args })));
    try {
      const kids = await Promise.all(started.map(publishedKids));
      assertEquals(kids.map((k) => k.length), [1, 1, 1]);
      assertEquals(new Set(kids.flat()).size, 1, "one key for all");
    } finally {
      for (const server of started) await server[Symbol.asyncDispose]();
    }
  },
});
