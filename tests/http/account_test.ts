/** Account endpoints: files, usage, tokens, deal extension, limits, piece-cids, OpenAPI. */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import {
  bearer,
  errorOf,
  jtiOf,
  patternBytes,
  signup,
  startTestServer,
} from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { FakeClock } from "../helpers/clock.ts";
import { KIB, MIB } from "../helpers/bytes.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

async function getJson(server: TestServer, path: string, token?: string) {
  const response = await server.get(path, { headers: token ? bearer(token) : {} });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Each query on path, with the token, is refused 400 invalid_request. */
async function assertInvalidQueries(
  server: TestServer,
  token: string,
  path: string,
  queries: string[],
): Promise<void> {
  for (const query of queries) {
    const response = await server.get(`${path}${query}`, { headers: bearer(token) });
    assertEquals(response.status, 400, query);
    assertEquals((await errorOf(response)).error, "invalid_request");
  }
}

async function uploadAs(
  server: TestServer,
  token: string,
  cid: string,
  bytes: Uint8Array<ArrayBuffer>,
) {
  const response = await server.upload(cid, bytes, {
    headers: bearer(token),
    filename: `${cid}.bin`,
  });
  assertEquals(response.status, 200, cid);
  return await response.json();
}

const accountPaths = ["/api/files", "/api/usage", "/api/tokens"];

Deno.test("account: list endpoints need a token (401) with the list scope (403)", async () => {
  await using server = await startTestServer();
  const putOnly = (await signup(server, { scopes: ["put", "pin"] })).token;
  for (const path of accountPaths) {
    const anonymous = await server.get(path);
    assertEquals(anonymous.status, 401, path);
    assertEquals((await errorOf(anonymous)).error, "invalid_token");
    const noScope = await server.get(path, { headers: bearer(putOnly) });
    assertEquals(noScope.status, 403, path);
    assertEquals((await errorOf(noScope)).error, "insufficient_scope");
  }
});

Deno.test("files: the caller's uploads, newest first, with every field", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server);
  const first = await uploadAs(server, token, "bafkfilesone01", patternBytes(10));
  clock.advance(1000);
  const second = await uploadAs(server, token, "BafkFilesTwo02", patternBytes(20));
  const { status, body } = await getJson(server, "/api/files", token);
  assertEquals(status, 200);
  assertEquals(body.nextCursor, null);
  assertEquals(body.files.map((f: { dealId: string }) => f.dealId), [second.dealId, first.dealId]);
  assertEquals(body.files[1], {
    cid: "bafkfilesone01",
    dealId: first.dealId,
    size: 10,
    contentType: "application/octet-stream",
    filename: "bafkfilesone01.bin",
    createdAt: "2026-11-21T10:00:00Z",
    term: "365 days",
    termEndsAt: "2027-11-21T10:00:00Z",
    state: "active",
    deletedAt: null,
    retrievalUrl: `${server.url}/p/bafkfilesone01`,
  });
  assertEquals(body.files[0].cid, "bafkfilestwo02");
});

Deno.test("files: one user never sees another user's files", async () => {
  await using server = await startTestServer();
  const alice = (await signup(server, { email: "alice@example.org" })).token;
  const bob = (await signup(server, { email: "bob@example.org" })).token;
  await uploadAs(server, alice, "bafkalicefile1", patternBytes(5));
  const sponsored = await server.upload("bafkanonymous1", "x");
  await sponsored.body?.cancel();
  assertEquals((await getJson(server, "/api/files", bob)).body.files, []);
  assertEquals((await getJson(server, "/api/files", alice)).body.files.length, 1);
});

Deno.test("files: pagination over 250 uploads stays exact while new uploads arrive", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const uploaded: string[] = [];
  for (let batch = 0; batch < 25; batch++) {
    const results = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          uploadAs(server, token, `bafkpage${batch * 10 + i}x`, patternBytes(16, batch * 10 + i)),
      ),
    );
    uploaded.push(...results.map((r) => r.dealId));
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  let extra = 0;
  do {
    const query: string = cursor ? `?limit=100&cursor=${cursor}` : "?limit=100";
    // Uploads land between page reads; they are newer than every page still to come.
    await uploadAs(server, token, `bafkduringpaging${extra++}`, patternBytes(8, 1000 + extra));
    const { status, body } = await getJson(server, `/api/files${query}`, token);
    assertEquals(status, 200);
    seen.push(...body.files.map((f: { dealId: string }) => f.dealId));
    cursor = body.nextCursor;
    pages++;
  } while (cursor !== null && pages < 10);
  // The first page started after the first concurrent upload, so it holds that one too.
  const expected = [...uploaded].sort().reverse();
  assertEquals(seen.length, 251);
  assertEquals(new Set(seen).size, 251, "no duplicates");
  assertEquals(seen.slice(1), expected, "no gaps, newest first");
  assertEquals(pages, 3);
});

Deno.test("files: limit and cursor are validated; ?token= is accepted but deprecated", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const queries = [
    "?limit=0",
    "?limit=1001",
    "?limit=abc",
    "?cursor=%%%",
    "?cursor=bm9wZSBub3BlIQ",
  ];
  await assertInvalidQueries(server, token, "/api/files", queries);
  const viaQuery = await server.get(`/api/files?token=${token}`);
  assertEquals(viaQuery.status, 200);
  assertEquals(viaQuery.headers.get("deprecation"), "@1767225600");
  await viaQuery.body?.cancel();
});

Deno.test("usage: per-day sums equal what was uploaded, with quota and what is left", async () => {
  const clock = new FakeClock("2026-11-20T12:00:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server, { quotaMb: 10 });
  const other = (await signup(server, { email: "other@example.org" })).token;
  await uploadAs(server, token, "bafkusage00001", patternBytes(100));
  await uploadAs(server, token, "bafkusage00002", patternBytes(200, 1));
  clock.set("2026-11-21T09:00:00Z");
  await uploadAs(server, token, "bafkusage00003", patternBytes(KIB, 2));
  await uploadAs(server, token, "bafkusage00003", patternBytes(KIB, 2)); // a dedupe still counts
  await uploadAs(server, other, "bafkusage00004", patternBytes(5 * KIB, 3));
  const { status, body } = await getJson(
    server,
    "/api/usage?from=2026-11-19&to=2026-11-21",
    token,
  );
  assertEquals(status, 200);
  assertEquals(body, {
    from: "2026-11-19",
    to: "2026-11-21",
    days: [
      { date: "2026-11-19", bytes: 0, uploads: 0 },
      { date: "2026-11-20", bytes: 300, uploads: 2 },
      { date: "2026-11-21", bytes: 2 * KIB, uploads: 2 },
    ],
    quotaBytes: 10 * MIB,
    remainingTodayBytes: 10 * MIB - 2 * KIB,
  });
});

Deno.test("usage: the default range is the last 30 days; dates and spans are validated", async () => {
  const clock = new FakeClock("2026-11-21T12:00:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server);
  const { body } = await getJson(server, "/api/usage", token);
  assertEquals(body.days.length, 30);
  assertEquals(body.from, "2026-10-23");
  assertEquals(body.to, "2026-11-21");
  await assertInvalidQueries(server, token, "/api/usage", [
    "?from=2026-13-01",
    "?from=2026-02-30",
    "?to=yesterday",
    "?from=2026-11-21&to=2026-11-20",
    "?from=2025-01-01&to=2026-11-21",
  ]);
  const full = await getJson(server, "/api/usage?from=2025-11-21&to=2026-11-21", token);
  assertEquals(full.body.days.length, 366);
});

Deno.test("tokens: the user's tokens are listed with revoked ones marked, never the token", async () => {
  await using server = await startTestServer();
  const laptop = await signup(server, { label: "laptop" });
  const ci = await signup(server, { label: "ci", scopes: ["put"], quotaMb: 5 });
  const stranger = await signup(server, { email: "stranger@example.org" });
  const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: bearer(laptop.token),
    body: JSON.stringify({ jti: jtiOf(ci.token) }),
  });
  assertEquals(revoke.status, 200);
  await revoke.body?.cancel();
  const { status, body } = await getJson(server, "/api/tokens", laptop.token);
  assertEquals(status, 200);
  const text = JSON.stringify(body);
  assertOk(!text.includes("pk_live_") && !text.includes(laptop.token.split(".")[2]));
  assertEquals(body.tokens.length, 2);
  const byLabel = Object.fromEntries(body.tokens.map((t: { label: string }) => [t.label, t]));
  assertEquals(byLabel.ci.jti, jtiOf(ci.token));
  assertEquals(byLabel.ci.revoked, true);
  assertMatch(byLabel.ci.revokedAt, /Z$/);
  assertEquals(byLabel.ci.scopes, ["put"]);
  assertEquals(byLabel.ci.quotaMb, 5);
  assertEquals(byLabel.laptop.revoked, false);
  assertEquals(byLabel.laptop.revokedAt, null);
  assertEquals(byLabel.laptop.current, true);
  assertOk(!text.includes(jtiOf(stranger.token)));
});

Deno.test("deals: extending adds one tier term and returns the deal", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({ clock });
  const { token } = await signup(server);
  const { dealId } = await uploadAs(server, token, "bafkextend0001", patternBytes(64));
  const response = await fetch(`${server.url}/api/deals/${dealId}/extend`, {
    method: "POST",
    headers: bearer(token),
  });
  assertEquals(response.status, 200);
  const deal = await response.json();
  assertEquals(deal.dealId, dealId);
  assertEquals(deal.term, "730 days");
  assertEquals(deal.termEndsAt, "2028-11-20T10:00:00Z");
  const listed = (await getJson(server, "/api/files", token)).body.files[0];
  assertEquals(listed.termEndsAt, "2028-11-20T10:00:00Z");
});

Deno.test("deals: another user's, a sponsored or an unknown deal is 404; no pin scope is 403", async () => {
  await using server = await startTestServer();
  const alice = (await signup(server, { email: "alice@example.org" })).token;
  const mallory = (await signup(server, { email: "mallory@example.org" })).token;
  const noPin =
    (await signup(server, { email: "alice@example.org", scopes: ["put", "list"] })).token;
  const { dealId } = await uploadAs(server, alice, "bafkforeign001", patternBytes(64));
  const sponsored = await (await server.upload("bafksponsored1", "x")).json();
  const extend = (id: string, token: string) =>
    fetch(`${server.url}/api/deals/${id}/extend`, { method: "POST", headers: bearer(token) });
  for (const id of [dealId, sponsored.dealId, "stage-00000000000000000000000000", "nope"]) {
    const response = await extend(id, mallory);
    assertEquals(response.status, 404, id);
    assertEquals((await errorOf(response)).error, "not_found");
  }
  const forbidden = await extend(dealId, noPin);
  await assertErrorAnswer(forbidden, 403, "insufficient_scope");
  const listed = (await getJson(server, "/api/files", alice)).body.files[0];
  assertEquals(listed.term, "365 days", "nothing was extended");
});

Deno.test("limits: anonymous callers see the sponsored tier, token holders their quota", async () => {
  const clock = new FakeClock("2026-11-21T18:00:00Z");
  await using server = await startTestServer({ clock, args: ["--sponsored-daily-cap", "1MiB"] });
  const sponsoredUpload = await server.upload("bafklimits0001", patternBytes(KIB));
  await sponsoredUpload.body?.cancel();
  const anonymous = await getJson(server, "/api/limits");
  assertEquals(anonymous.status, 200);
  assertEquals(anonymous.body, {
    tier: "sponsored",
    maxFileBytes: 100 * MIB,
    dailyCapBytes: MIB,
    usedTodayBytes: KIB,
    remainingTodayBytes: MIB - KIB,
    resetsAt: "2026-11-22T00:00:00Z",
    resetSeconds: 6 * 3600,
    // No --wallet-rpc-url: no wallet tier listed.
    tiers: [
      {
        tier: "sponsored",
        auth: "none",
        maxFileBytes: 100 * MIB,
        dailyCapBytes: MIB,
        termDays: 30,
      },
      {
        tier: "token",
        auth: "token",
        maxFileBytes: 5 * 1024 * MIB,
        dailyCapBytes: 1024 * MIB,
        termDays: 365,
      },
    ],
  });
  const { token } = await signup(server, { quotaMb: 2 });
  await uploadAs(server, token, "bafklimits0002", patternBytes(MIB));
  const withToken = await getJson(server, `/api/limits?size=${MIB + 1}`, token);
  assertEquals(withToken.body.tier, "token");
  assertEquals(withToken.body.maxFileBytes, 5 * 1024 * MIB);
  assertEquals(withToken.body.dailyCapBytes, 2 * MIB);
  assertEquals(withToken.body.remainingTodayBytes, MIB);
  assertEquals(withToken.body.accepted, false);
  assertEquals(withToken.body.reason, "quota_exceeded");
  assertEquals((await getJson(server, `/api/limits?size=${MIB}`, token)).body.accepted, true);
  const tooBig = await getJson(server, `/api/limits?size=${200 * MIB}`);
  assertEquals([tooBig.body.accepted, tooBig.body.reason], [false, "too_large"]);
  const bad = await server.get("/api/limits?size=-1");
  assertEquals((await errorOf(bad)).error, "invalid_request");
  const badToken = await server.get("/api/limits", { headers: bearer("pk_live_x.y.z") });
  assertEquals(badToken.status, 401);
  await badToken.body?.cancel();
});

Deno.test("piece-cids: a public description of the accepted cid forms", async () => {
  await using server = await startTestServer();
  const { status, body } = await getJson(server, "/api/piece-cids");
  assertEquals(status, 200);
  assertEquals(body.pattern, "^[a-z0-9]{8,80}$");
  assertEquals(
    body.forms.map((f: { name: string }) => f.name),
    ["PieceCIDv2", "PieceCIDv1", "CIDv1 sha2-256", "opaque"],
  );
});

Deno.test("openapi: every route of the route table is documented, and nothing else", async () => {
  await using server = await startTestServer();
  const { status, body } = await getJson(server, "/openapi.json");
  assertEquals(status, 200);
  assertEquals(body.openapi, "3.1.0");
  const routes = server.server.routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`)
    .sort();
  const documented: string[] = [];
  for (const [path, operations] of Object.entries(body.paths as Record<string, object>)) {
    for (const method of Object.keys(operations)) {
      if (method === "head") continue; // HEAD is served by every GET route
      documented.push(`${method.toUpperCase()} ${path}`);
    }
  }
  assertEquals(documented.sort(), routes);
  assertEquals(body.servers[0].url, server.url);
});
