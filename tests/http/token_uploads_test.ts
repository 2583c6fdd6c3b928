/** Token-tier uploads: owner, per-file cap, per-user daily quota shared by a user's tokens. */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { bearer, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import { FakeClock } from "../helpers/clock.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { KIB, MIB } from "../helpers/bytes.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

Deno.test("token upload: sponsored false, owner is the token's e-mail, term 365 days", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "Owner@Example.org" });
  const response = await server.upload("bafktokenup001", "hello", { headers: bearer(token) });
  assertEquals(response.status, 200);
  const result = await response.json();
  assertEquals(result.sponsored, false);
  assertEquals(result.owner, "owner@example.org");
  assertEquals(result.term, "365 days");
  assertEquals(result.size, 5);
  assertEquals(
    response.headers.get("ratelimit-policy"),
    `"daily";q=${1024 * MIB};w=86400;qu="content-bytes"`,
  );
  assertMatch(
    response.headers.get("ratelimit")!,
    new RegExp(`^"daily";r=${1024 * MIB - 5};t=\\d+$`),
  );
});

Deno.test("token upload: the token tier's per-file cap applies, not the sponsored one", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-max-file-size", "1KiB", "--token-max-file-size", "4KiB"],
  });
  const { token } = await signup(server);
  const sponsored = await server.upload("bafkfilecap001", new Uint8Array(2 * KIB));
  assertEquals(sponsored.status, 413);
  await sponsored.body?.cancel();
  const withToken = await server.upload("bafkfilecap001", new Uint8Array(2 * KIB), {
    headers: bearer(token),
  });
  assertEquals(withToken.status, 200);
  await withToken.body?.cancel();
  const over = await server.upload("bafkfilecap002", new Uint8Array(4 * KIB + 1), {
    headers: bearer(token),
  });
  await assertErrorAnswer(over, 413, "too_large");
});

Deno.test("token upload: the default per-file cap is 5 GiB, checked from Content-Length", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const response = await rawRequest(
    Number(new URL(server.url).port),
    `POST /api/upload?cid=bafkfivegib002 HTTP/1.1\nHost: x\nAuthorization: Bearer ${token}\n` +
      `Content-Type: a/b\nContent-Length: ${5 * 1024 * MIB + 1}\nConnection: close\n`,
  );
  assertEquals(response?.status, 413);
});

Deno.test("quota: two tokens of one user share one daily quota (429 quota_exceeded)", async () => {
  const clock = new FakeClock("2026-11-21T18:00:00Z");
  await using server = await startTestServer({ clock });
  const a = await signup(server, { email: "shared@example.org", quotaMb: 1 });
  const b = await signup(server, { email: "shared@example.org", quotaMb: 1 });
  const first = await server.upload("bafkquota00001", patternBytes(600 * KIB), {
    headers: bearer(a.token),
  });
  assertEquals(first.status, 200);
  await first.body?.cancel();
  const refused = await server.upload("bafkquota00002", patternBytes(600 * KIB, 1), {
    headers: bearer(b.token),
  });
  await assertErrorAnswer(refused, 429, "quota_exceeded");
  assertEquals(refused.headers.get("retry-after"), String(6 * 3600));
  assertMatch(refused.headers.get("ratelimit")!, new RegExp(`r=${424 * KIB};`));
  const fits = await server.upload("bafkquota00003", patternBytes(424 * KIB, 2), {
    headers: bearer(b.token),
  });
  assertEquals(fits.status, 200);
  await fits.body?.cancel();
});

Deno.test("quota: another user's quota and the sponsored IP cap are separate counters", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "1KiB"] });
  const alice = await signup(server, { email: "alice@example.org", quotaMb: 1 });
  const bob = await signup(server, { email: "bob@example.org", quotaMb: 1 });
  for (const [i, t] of [alice.token, bob.token].entries()) {
    const r = await server.upload(`bafkseparate0${i}`, patternBytes(MIB, i), {
      headers: bearer(t),
    });
    assertEquals(r.status, 200);
    await r.body?.cancel();
  }
  // Token uploads never touched this IP's sponsored counter.
  const sponsored = await server.upload("bafkseparate09", patternBytes(KIB, 9));
  assertEquals(sponsored.status, 200);
  await sponsored.body?.cancel();
});

Deno.test("quota: parallel uploads of one user never exceed the quota", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { quotaMb: 1 });
  const responses = await Promise.all(
    Array.from(
      { length: 12 },
      (_, i) =>
        server.upload(`bafkparquota${i}x`, patternBytes(200 * KIB, i), { headers: bearer(token) }),
    ),
  );
  const statuses = responses.map((r) => r.status);
  await Promise.all(responses.map((r) => r.body?.cancel()));
  assertEquals(statuses.filter((s) => s === 200).length, 5);
  assertEquals(statuses.filter((s) => s === 429).length, 7);
});

Deno.test("quota: a failed upload refunds its reservation", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { quotaMb: 1 });
  const stored = await server.upload("bafkrefund0001", patternBytes(512 * KIB), {
    headers: bearer(token),
  });
  assertEquals(stored.status, 200);
  await stored.body?.cancel();
  // Different bytes under the same cid: 409, and the 512 KiB it reserved come back.
  const conflict = await server.upload("bafkrefund0001", patternBytes(512 * KIB, 1), {
    headers: bearer(token),
  });
  assertEquals(conflict.status, 409);
  await conflict.body?.cancel();
  const rest = await server.upload("bafkrefund0002", patternBytes(512 * KIB, 2), {
    headers: bearer(token),
  });
  assertEquals(rest.status, 200);
  await rest.body?.cancel();
});

Deno.test("quota: the counter resets at 00:00 UTC", async () => {
  const clock = new FakeClock("2026-11-21T23:59:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server, { quotaMb: 1 });
  const full = await server.upload("bafkmidnight01", patternBytes(MIB), { headers: bearer(token) });
  assertEquals(full.status, 200);
  await full.body?.cancel();
  const refused = await server.upload("bafkmidnight02", patternBytes(1), {
    headers: bearer(token),
  });
  assertEquals(refused.status, 429);
  assertEquals(refused.headers.get("retry-after"), "60");
  await refused.body?.cancel();
  clock.set("2026-11-22T00:00:00Z");
  const next = await server.upload("bafkmidnight02", patternBytes(MIB, 1), {
    headers: bearer(token),
  });
  assertEquals(next.status, 200);
  await next.body?.cancel();
});

Deno.test("quota: a token's quota never exceeds the tier's daily cap", async () => {
  await using server = await startTestServer({ args: ["--token-daily-cap", "2MiB"] });
  const response = await fetch(`${server.url}/api/auth/signup`, {
    method: "POST",
    body: JSON.stringify({ email: "a@b.co", label: "x", quotaMb: 3 }),
  });
  await assertErrorAnswer(response, 400, "invalid_quota");
  const { quotaMb } = await signup(server);
  assertEquals(quotaMb, 2);
});
