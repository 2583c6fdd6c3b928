/**
 * POST /api/deals {"cid"}: a deal on bytes already stored, without sending
 * them, made and charged exactly as an upload of those bytes would be (tier,
 * term, caps, quota headers); 404 when nothing is stored under the cid.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { KIB, seededBytes } from "../helpers/bytes.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";

const BYTES = seededBytes(300 * KIB, 71);
const CID = pieceCidOf(BYTES);

function createDeal(server: TestServer, cid: unknown, headers: Record<string, string> = {}) {
  return fetch(`${server.url}/api/deals`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ cid }),
  });
}

Deno.test("deals: a user gets a deal of their own on bytes another user stored, charged as an upload", async () => {
  await using server = await startTestServer();
  const alice = await signup(server, { email: "alice@example.org" });
  const bob = await signup(server, { email: "bob@example.org" });
  const uploaded = await server.upload(CID, BYTES, {
    headers: bearer(alice.token),
    contentType: "image/png",
    filename: "a.png",
  });
  assertEquals(uploaded.status, 200);
  const aliceDeal = await uploaded.json();

  const answer = await createDeal(server, CID, bearer(bob.token));
  assertEquals(answer.status, 200);
  assertOk(answer.headers.get("ratelimit"));
  const deal = await answer.json();
  assertEquals(
    [deal.cid, deal.size, deal.owner, deal.sponsored, deal.term],
    [CID, BYTES.length, "bob@example.org", false, aliceDeal.term],
  );
  assertOk(deal.dealId !== aliceDeal.dealId);
  const files = await (await server.get("/api/files", { headers: bearer(bob.token) })).json();
  assertEquals(files.files.length, 1);
  assertEquals([files.files[0].dealId, files.files[0].contentType], [deal.dealId, "image/png"]);
  const limits = await (await server.get("/api/limits", { headers: bearer(bob.token) })).json();
  assertEquals(limits.usedTodayBytes, BYTES.length);
  // ?cid= finds a caller's deals on one cid (how clients tell they own one already).
  const mine = await server.get(`/api/files?cid=${CID}`, { headers: bearer(bob.token) });
  assertEquals((await mine.json()).files.map((f: { dealId: string }) => f.dealId), [deal.dealId]);
  const none = await server.get(`/api/files?cid=bafkothercid01`, { headers: bearer(bob.token) });
  assertEquals((await none.json()).files, []);
});

Deno.test("deals: sponsored callers get a sponsored deal, charged to their address", async () => {
  await using server = await startTestServer();
  assertEquals((await server.upload(CID, BYTES)).status, 200);
  const answer = await createDeal(server, CID);
  assertEquals(answer.status, 200);
  const deal = await answer.json();
  assertEquals([deal.sponsored, deal.owner], [true, null]);
  const limits = await (await server.get("/api/limits")).json();
  assertEquals(limits.usedTodayBytes, 2 * BYTES.length, "the upload and the deal");
});

Deno.test("deals: refusals: not stored 404, a bad cid 400, caps 413/429, a token without put 403", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-daily-cap", "250KiB", "--sponsored-max-file-size", "200KiB"],
  });
  const { token } = await signup(server);
  const small = seededBytes(100 * KIB, 72);
  const smallCid = pieceCidOf(small);
  assertEquals((await server.upload(CID, BYTES, { headers: bearer(token) })).status, 200);
  assertEquals((await server.upload(smallCid, small, { headers: bearer(token) })).status, 200);
  const missing = await createDeal(server, "bafknotstored01");
  assertEquals([missing.status, (await errorOf(missing)).error], [404, "not_found"]);
  assertMatch((await errorOf(await createDeal(server, "bafknotstored01"))).message, /upload/);
  for (const bad of ["x", 42, null]) {
    const answer = await createDeal(server, bad);
    assertEquals([answer.status, (await errorOf(answer)).error], [400, "invalid_cid"]);
  }
  // 300 KiB is over the sponsored per-file cap, as its upload would be.
  const big = await createDeal(server, CID);
  assertEquals([big.status, (await errorOf(big)).error], [413, "too_large"]);
  // Two deals of 100 KiB fit in 250 KiB, a third does not.
  for (const status of [200, 200, 429]) {
    const answer = await createDeal(server, smallCid);
    assertEquals(answer.status, status);
    await answer.body?.cancel();
  }
  const { token: getOnly } = await signup(server, { email: "g@example.org", scopes: ["get"] });
  const scoped = await createDeal(server, CID, bearer(getOnly));
  assertEquals([scoped.status, (await errorOf(scoped)).error], [403, "insufficient_scope"]);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});
