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
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

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
  await assertErrorAnswer(wrong, 400, "invalid_code");

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

/** Signup and verify for one address, from one client (a 127.0.0.x source address). */
function clientOf(server: TestServer, sink: SmtpSink, email: string, localAddress = "127.0.0.1") {
  const client = Deno.createHttpClient({ localAddress });
  const send = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: "POST",
      client,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return {
    /** Asks for a code: the status, and the code from the mail when one was sent. */
    async askCode(): Promise<{ status: number; code: string | null }> {
      const asked = await send("/api/auth/signup", { email, label: "x" });
      await asked.body?.cancel();
      if (asked.status !== 202) return { status: asked.status, code: null };
      return { status: 202, code: codeIn((await sink.nextMessage()).data) };
    },
    async tryCode(code: string): Promise<number> {
      const tried = await send("/api/auth/signup/verify", { email, code });
      await tried.body?.cancel();
      return tried.status;
    },
    [Symbol.dispose]: () => client.close(),
  };
}

const wrongFor = (code: string) => code === "12345678" ? "87654321" : "12345678";

Deno.test("signup verify: five wrong tries per code; a new code a minute later has fresh ones; codes expire", async () => {
  await using sink = startSmtpSink();
  const clock = new FakeClock();
  await using server = await startTestServer({ args: verifyArgs(sink), clock });
  using owner = clientOf(server, sink, "b@example.org");

  // Four wrong tries still leave the right code working.
  const first = (await owner.askCode()).code!;
  for (let i = 0; i < 4; i++) assertEquals(await owner.tryCode(wrongFor(first)), 400);
  assertEquals(await owner.tryCode(first), 201);

  // A new code within a minute of the last is refused, so codes cannot be churned.
  const second = (await owner.askCode()).code!;
  const tooSoon = await post(server, "/api/auth/signup", { email: "b@example.org", label: "x" });
  assertEquals(tooSoon.status, 429);
  assertMatch(tooSoon.headers.get("retry-after")!, /^([1-9]|[1-5]\d|60)$/);
  await tooSoon.body?.cancel();
  // Five wrong tries use the code up: then even the right one is refused.
  for (let i = 0; i < 5; i++) assertEquals(await owner.tryCode(wrongFor(second)), 400);
  assertEquals(await owner.tryCode(second), 400, "the right code after five wrong ones");
  // A minute on, a new signup is a fresh code with fresh tries, at once.
  clock.advance(61_000);
  const third = (await owner.askCode()).code!;
  for (let i = 0; i < 4; i++) assertEquals(await owner.tryCode(wrongFor(third)), 400);
  assertEquals(await owner.tryCode(third), 201);

  // An expired code never works.
  clock.advance(61_000);
  const fourth = (await owner.askCode()).code!;
  clock.advance(15 * 60_000 + 1000);
  assertEquals(await owner.tryCode(fourth), 400, "an expired code");
  const fifth = (await owner.askCode()).code!;
  assertEquals(await owner.tryCode(fifth), 201, "a fresh code works");
  const rows = server.server.db.prepare("SELECT count(*) AS n FROM signup_codes").get();
  assertEquals(Number((rows as { n: number }).n), 0, "redeemed and expired codes are gone");
});

Deno.test("signup verify: another client's wrong tries and signups cannot lock the owner out", async () => {
  await using sink = startSmtpSink();
  await using server = await startTestServer({ args: verifyArgs(sink) });
  using owner = clientOf(server, sink, "c@example.org", "127.0.0.1");
  using mallory = clientOf(server, sink, "c@example.org", "127.0.0.2");

  const ownCode = (await owner.askCode()).code!;
  // Mallory guesses until the tries would be used up, and asks for codes of her own.
  for (let i = 0; i < 6; i++) assertEquals(await mallory.tryCode(wrongFor(ownCode)), 400);
  const mallorys = await mallory.askCode();
  assertEquals(mallorys.status, 202, "her own code: mailed to the owner, not to her");
  for (let i = 0; i < 6; i++) assertEquals(await mallory.tryCode(wrongFor(ownCode)), 400);
  // The owner's code still works, and the code mailed for Mallory's request does not work
  // from the owner's client (nor would the owner's from hers).
  assertEquals(await owner.tryCode(mallorys.code!), 400);
  assertEquals(await owner.tryCode(ownCode), 201);
  assertEquals(await mallory.tryCode(ownCode), 400);

  // After Mallory's tries, a new signup by the owner is a fresh code at once, never a 429.
  const again = await owner.askCode();
  assertEquals(again.status, 202);
  assertEquals(await owner.tryCode(again.code!), 201);
});

Deno.test("signup verify: a mail server that refuses or is down is 503 mail_unavailable", async () => {
  await using sink = startSmtpSink();
  sink.refuse = true;
  await using server = await startTestServer({
    args: [...verifyArgs(sink), "--signup-limit", "1"],
  });
  const refused = await post(server, "/api/auth/signup", { email: "c@example.org", label: "x" });
  await assertErrorAnswer(refused, 503, "mail_unavailable");
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
  await assertErrorAnswer(unreachable, 503, "mail_unavailable");
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
  await withTempDir("storage-signup-e2e-", async (dataDir) => {
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
  });
});
