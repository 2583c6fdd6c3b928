/**
 * --signup open | verify | closed, end to end: verify mode's codes travel
 * through a real SMTP exchange (tests/helpers/smtp_sink.ts on 127.0.0.1) and
 * are read out of the delivered mail.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { bearer, errorOf, jtiOf, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { startSmtpSink } from "../helpers/smtp_sink.ts";
import type { SmtpSink } from "../helpers/smtp_sink.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";

function post(server: TestServer, path: string, body: unknown) {
  return server.get(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function verifyArgs(sink: SmtpSink): string[] {
  return ["--signup", "verify", "--smtp-url", sink.url, "--mail-from", "storage@example.org"];
}

/** The code in a delivered signup mail. */
function codeIn(data: string): string {
  const match = /finish signing up at \S+ is (\d{8})\./.exec(data.replace(/=\r\n/g, ""));
  assertOk(match, `no code in the mail:\n${data}`);
  return match[1];
}

Deno.test("signup open: 201 with the token and its jti, which revokes it", async () => {
  await using server = await startTestServer();
  const response = await post(server, "/api/auth/signup", { email: "a@example.org", label: "x" });
  assertEquals(response.status, 201);
  const result = await response.json();
  assertEquals(result.jti, jtiOf(result.token));
  const revoke = await post(server, "/api/tokens/revoke", { jti: result.jti });
  assertEquals(revoke.status, 401, "a revoke needs the token itself");
  await revoke.body?.cancel();
  const revoked = await server.get("/api/tokens/revoke", {
    method: "POST",
    headers: { "content-type": "application/json", ...bearer(result.token) },
    body: JSON.stringify({ jti: result.jti }),
  });
  assertEquals(revoked.status, 200);
  await revoked.body?.cancel();
  // No warning on a loopback address.
  assertEquals(server.logs.some((l) => String(l.msg).startsWith("signup is open")), false);
});

Deno.test("signup open on a non-loopback address logs a warning at start-up", async () => {
  await using server = await startTestServer({ args: ["--hostname", "0.0.0.0"] });
  const warning = server.logs.find((l) => String(l.msg).startsWith("signup is open"));
  assertOk(warning, JSON.stringify(server.logs));
  assertEquals(warning.level, "warn");
});

Deno.test("signup verify: a mailed code, once, for the address that received it", async () => {
  await using sink = startSmtpSink();
  await using server = await startTestServer({ args: verifyArgs(sink) });
  const asked = await post(server, "/api/auth/signup", {
    email: " Alice@Example.ORG ",
    label: "laptop",
    scopes: ["put", "list"],
  });
  assertEquals(asked.status, 202);
  assertEquals(await asked.json(), { status: "verification_sent", email: "alice@example.org" });
  const mail = await sink.nextMessage();
  assertEquals([mail.from, mail.to], ["storage@example.org", ["alice@example.org"]]);
  const code = codeIn(mail.data);

  const wrong = await post(server, "/api/auth/signup/verify", {
    email: "alice@example.org",
    code: code === "00000000" ? "00000001" : "00000000",
  });
  assertEquals(wrong.status, 400);
  assertEquals((await errorOf(wrong)).error, "invalid_code");

  const verified = await post(server, "/api/auth/signup/verify", {
    email: "ALICE@example.org",
    code,
  });
  assertEquals(verified.status, 201);
  const result = await verified.json();
  assertEquals([result.email, result.scopes, result.jti], [
    "alice@example.org",
    ["put", "list"],
    jtiOf(result.token),
  ]);
  const files = await server.get("/api/files", { headers: bearer(result.token) });
  assertEquals(files.status, 200);
  await files.body?.cancel();

  const again = await post(server, "/api/auth/signup/verify", { email: "alice@example.org", code });
  assertEquals((await errorOf(again)).error, "invalid_code", "a code works once");
});

Deno.test("signup verify: five wrong tries per address, kept across new codes; codes expire", async () => {
  await using sink = startSmtpSink();
  const clock = new FakeClock();
  await using server = await startTestServer({ args: verifyArgs(sink), clock });
  const askCode = async () => {
    const asked = await post(server, "/api/auth/signup", { email: "b@example.org", label: "x" });
    assertEquals(asked.status, 202);
    await asked.body?.cancel();
    return codeIn((await sink.nextMessage()).data);
  };
  const tryCode = async (code: string) =>
    (await post(server, "/api/auth/signup/verify", { email: "b@example.org", code })).status;
  const wrongFor = (code: string) => code === "12345678" ? "87654321" : "12345678";

  // Four wrong tries still leave the right code working.
  const first = await askCode();
  for (let i = 0; i < 4; i++) assertEquals(await tryCode(wrongFor(first)), 400);
  assertEquals(await tryCode(first), 201);

  // A new code within a minute of the last is refused, so codes cannot be churned.
  const second = await askCode();
  const tooSoon = await post(server, "/api/auth/signup", { email: "b@example.org", label: "x" });
  assertEquals(tooSoon.status, 429);
  assertMatch(tooSoon.headers.get("retry-after")!, /^([1-9]|[1-5]\d|60)$/);
  await tooSoon.body?.cancel();
  // Wrong tries carry over to a new code: three now, two after a re-signup, then none left.
  for (let i = 0; i < 3; i++) assertEquals(await tryCode(wrongFor(second)), 400);
  clock.advance(61_000);
  const third = await askCode();
  for (let i = 0; i < 2; i++) assertEquals(await tryCode(wrongFor(third)), 400);
  assertEquals(await tryCode(third), 400, "the right code after five wrong ones for the address");
  clock.advance(61_000);
  const locked = await post(server, "/api/auth/signup", { email: "b@example.org", label: "x" });
  assertEquals(locked.status, 429, "no new code while the tries are used up");
  await locked.body?.cancel();

  // Once the code expires unused, the address starts afresh; an expired code never works.
  clock.advance(15 * 60_000);
  const fourth = await askCode();
  clock.advance(15 * 60_000 + 1000);
  assertEquals(await tryCode(fourth), 400, "an expired code");
  const fifth = await askCode();
  assertEquals(await tryCode(fifth), 201, "a fresh code works");
  const rows = server.server.db.prepare("SELECT count(*) AS n FROM signup_codes").get();
  assertEquals(Number((rows as { n: number }).n), 0, "redeemed and expired codes are gone");
});

Deno.test("signup verify: a mail server that refuses or is down is 503 mail_unavailable", async () => {
  await using sink = startSmtpSink();
  sink.refuse = true;
  await using server = await startTestServer({
    args: [...verifyArgs(sink), "--signup-limit", "1"],
  });
  const refused = await post(server, "/api/auth/signup", { email: "c@example.org", label: "x" });
  assertEquals(refused.status, 503);
  assertEquals((await errorOf(refused)).error, "mail_unavailable");
  assertMatch(refused.headers.get("retry-after")!, /^\d+$/);
  // The code that was not delivered is gone, and the refusal used up no signup slot.
  const codes = server.server.db.prepare("SELECT count(*) AS n FROM signup_codes").get();
  assertEquals(Number((codes as { n: number }).n), 0);
  sink.refuse = false;
  const retried = await post(server, "/api/auth/signup", { email: "c@example.org", label: "x" });
  assertEquals(retried.status, 202);
  await retried.body?.cancel();
  assertOk(codeIn((await sink.nextMessage()).data));

  using closedPort = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadUrl = `smtp://127.0.0.1:${closedPort.addr.port}`;
  closedPort.close();
  await using down = await startTestServer({
    args: ["--signup", "verify", "--smtp-url", deadUrl, "--mail-from", "s@example.org"],
  });
  const unreachable = await post(down, "/api/auth/signup", { email: "d@example.org", label: "x" });
  assertEquals(unreachable.status, 503);
  assertEquals((await errorOf(unreachable)).error, "mail_unavailable");
});

Deno.test("signup closed: both endpoints are 403 signup_closed and nothing is minted", async () => {
  await using server = await startTestServer({ args: ["--signup", "closed"] });
  for (const path of ["/api/auth/signup", "/api/auth/signup/verify"]) {
    const response = await post(server, path, { email: "e@example.org", label: "x", code: "1" });
    assertEquals(response.status, 403, path);
    assertEquals((await errorOf(response)).error, "signup_closed");
  }
  const count = server.server.db.prepare("SELECT count(*) AS n FROM tokens").get() as { n: number };
  assertEquals(Number(count.n), 0);
});

Deno.test("signup verify needs a mail server and a sender", () => {
  for (
    const args of [["--signup", "verify"], ["--signup", "verify", "--smtp-url", "smtp://h:25"]]
  ) {
    let message = "";
    try {
      loadConfig(args, {});
    } catch (error) {
      message = (error as Error).message;
    }
    assertMatch(message, /--signup verify needs --smtp-url and --mail-from/);
  }
});

Deno.test("signup verify works under the start task's narrow permissions", async () => {
  await using sink = startSmtpSink();
  const dataDir = await Deno.makeTempDir({ prefix: "storage-signup-e2e-" });
  try {
    await using server = await spawnServer(dataDir, verifyArgs(sink));
    const asked = await fetch(`${server.url}/api/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "f@example.org", label: "x" }),
    });
    assertEquals(asked.status, 202, server.stderr());
    await asked.body?.cancel();
    const code = codeIn((await sink.nextMessage()).data);
    const verified = await fetch(`${server.url}/api/auth/signup/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "f@example.org", code }),
    });
    assertEquals(verified.status, 201);
    await verified.body?.cancel();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
