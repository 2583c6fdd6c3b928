/** Revocation rules, their persistence, and HMAC key rotation. */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { bearer, errorOf, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { decodeToken, hmacSha256 } from "../helpers/jwt.ts";
import { eventually } from "../helpers/wait.ts";
import { startServer } from "../../src/server/start.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { silentLogger } from "../../src/kernel/log.ts";
import { spawnServer, startTaskFlags } from "../../scripts/lib/spawn_server.ts";
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

function revoke(server: TestServer, token: string, jti: unknown) {
  return fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: { "content-type": "application/json", ...bearer(token) },
    body: JSON.stringify({ jti }),
  });
}

async function uploadStatus(server: TestServer, token: string): Promise<number> {
  const response = await server.upload(`bafk${crypto.randomUUID().slice(0, 8)}`, "x", {
    headers: bearer(token),
  });
  await response.body?.cancel();
  return response.status;
}

async function errorCode(server: TestServer, token: string): Promise<string> {
  const response = await server.upload("bafkerrorcode01", "x", { headers: bearer(token) });
  return response.status === 200 ? "ok" : (await errorOf(response)).error;
}

Deno.test("revoke: a token revokes itself, and the very next request is 401 revoked_token", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const response = await revoke(server, token, jtiOf(token));
  assertEquals(response.status, 200);
  const body = await response.json();
  assertEquals(Object.keys(body).sort(), ["jti", "revoked", "revokedAt"]);
  assertEquals(body.jti, jtiOf(token));
  assertEquals(body.revoked, true);
  assertMatch(body.revokedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const next = await server.upload("bafkrevoked001", "x", { headers: bearer(token) });
  await assertErrorAnswer(next, 401, "revoked_token");
  assertEquals((await revoke(server, token, jtiOf(token))).status, 401);
});

Deno.test("revoke: a sibling token with the list scope revokes, idempotently", async () => {
  await using server = await startTestServer();
  const old = await signup(server, { label: "old" });
  const admin = await signup(server, { label: "admin", scopes: ["list"] });
  const first = await (await revoke(server, admin.token, jtiOf(old.token))).json();
  const again = await revoke(server, admin.token, jtiOf(old.token));
  assertEquals(again.status, 200);
  assertEquals((await again.json()).revokedAt, first.revokedAt);
  assertEquals(await errorCode(server, old.token), "revoked_token");
});

Deno.test("revoke: a sibling token without the list scope is 403 insufficient_scope", async () => {
  await using server = await startTestServer();
  const target = await signup(server);
  const ci = await signup(server, { scopes: ["put"] });
  const response = await revoke(server, ci.token, jtiOf(target.token));
  await assertErrorAnswer(response, 403, "insufficient_scope");
  assertEquals(await uploadStatus(server, target.token), 200);
  // A put-only token may still revoke itself.
  assertEquals((await revoke(server, ci.token, jtiOf(ci.token))).status, 200);
});

Deno.test("revoke: another user's jti or an unknown one is 404, so existence never leaks", async () => {
  await using server = await startTestServer();
  const alice = await signup(server, { email: "alice@example.org" });
  const mallory = await signup(server, { email: "mallory@example.org" });
  for (const jti of [jtiOf(alice.token), crypto.randomUUID()]) {
    const response = await revoke(server, mallory.token, jti);
    await assertErrorAnswer(response, 404, "not_found");
  }
  assertEquals(await uploadStatus(server, alice.token), 200);
});

Deno.test("revoke: needs a token and a jti", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const anonymous = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    body: JSON.stringify({ jti: jtiOf(token) }),
  });
  await assertErrorAnswer(anonymous, 401, "invalid_token");
  for (const jti of [undefined, 5, ""]) {
    const response = await revoke(server, token, jti);
    await assertErrorAnswer(response, 400, "invalid_request");
  }
  const broken = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: bearer(token),
    body: "{",
  });
  assertEquals((await errorOf(broken)).error, "invalid_json");
});

Deno.test("revoke: a revocation survives a restart", async () => {
  await withTempDir("storage-revoke-", async (dataDir) => {
    let token: string;
    let kept: string;
    {
      await using server = await startTestServer({ dataDir });
      token = (await signup(server)).token;
      kept = (await signup(server)).token;
      assertEquals((await revoke(server, token, jtiOf(token))).status, 200);
    }
    await using again = await startTestServer({ dataDir });
    assertEquals(await errorCode(again, token), "revoked_token");
    assertEquals(await uploadStatus(again, kept), 200);
  });
});

Deno.test("rotate-key: run while the server is up, every older token is refused within seconds", async () => {
  await using server = await startTestServer({ args: ["--hmac-key-reload", "1"] });
  const before = (await signup(server)).token;
  assertEquals(await uploadStatus(server, before), 200);
  const flags = (await startTaskFlags(server.dataDir)).filter((f) => !f.startsWith("--allow-net"));
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, `${ROOT}main.ts`, "rotate-key", "--data-dir", server.dataDir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  assertMatch(new TextDecoder().decode(out.stdout), /Rotated the HMAC key/);
  // The server re-reads its key file every second (--hmac-key-reload 1): poll the refusal.
  await eventually(
    async () => await errorCode(server, before) === "invalid_token",
    "the token signed with the old key refused as invalid_token",
    { timeoutMs: 5000, intervalMs: 50 },
  );
  const after = (await signup(server)).token;
  assertEquals(await uploadStatus(server, after), 200);
  const { signature, signingInput } = decodeToken(after);
  const newKey = (await Deno.readTextFile(`${server.dataDir}/hmac.key`)).trim();
  assertEquals(hmacSha256(newKey, signingInput), signature);
});

Deno.test("rotate-key: run while the server is stopped, older tokens fail after start", async () => {
  await withTempDir("storage-rotate-", async (dataDir) => {
    let token: string;
    {
      await using server = await spawnServer(dataDir);
      const response = await fetch(`${server.url}/api/auth/signup`, {
        method: "POST",
        body: JSON.stringify({ email: "a@b.co", label: "x" }),
      });
      token = (await response.json()).token;
    }
    const flags = await startTaskFlags(dataDir);
    const rotated = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, `${ROOT}main.ts`, "rotate-key", "--data-dir", dataDir],
      stdout: "null",
    }).output();
    assertEquals(rotated.code, 0);
    await using again = await spawnServer(dataDir);
    const response = await fetch(`${again.url}/api/upload?cid=bafkafterrotate`, {
      method: "POST",
      headers: { "content-type": "a/b", ...bearer(token) },
      body: "x",
    });
    await assertErrorAnswer(response, 401, "invalid_token");
  });
});

Deno.test("hmac key: an operator key file is used as given", async () => {
  await withTempDir("storage-keyfile-", async (dir) => {
    const keyHex = "0123456789abcdef".repeat(5);
    await Deno.writeTextFile(`${dir}/operator.key`, keyHex + "\n");
    await using server = await startTestServer({
      args: ["--hmac-key-file", `${dir}/operator.key`],
    });
    const { token } = await signup(server);
    const { signature, signingInput } = decodeToken(token);
    assertEquals(hmacSha256(keyHex, signingInput), signature);
    assertOk(!(await Deno.stat(`${server.dataDir}/hmac.key`).catch(() => null)));
  });
});

Deno.test("hmac key: a short or non-hex key file stops the server from starting", async () => {
  await withTempDir("storage-keyfile-", async (dir) => {
    for (const [content, problem] of [["abcd", /at least 64/], ["zz".repeat(40), /hex digits/]]) {
      await Deno.writeTextFile(`${dir}/bad.key`, content as string);
      const loaded = loadConfig(
        ["--port", "0", "--data-dir", `${dir}/data`, "--hmac-key-file", `${dir}/bad.key`],
        {},
      );
      if (loaded.kind !== "config") throw new Error("unexpected help");
      let message = "";
      await startServer({ config: loaded.config, logger: silentLogger }).catch((e) =>
        message = e.message
      );
      assertMatch(message, problem as RegExp);
    }
  });
});
