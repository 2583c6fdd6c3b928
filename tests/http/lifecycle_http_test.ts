/**
 * The lifecycle's HTTP surface beyond the suite (tests/ops/lifecycle_suite.ts):
 * who may delete a deal and what deleting does (and does not) give back, the
 * state filter as it pages, what /healthz, /metrics and the start-up summary
 * show of garbage collection, and the server sweeping by itself.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { DAY_MS, LIFECYCLE_ARGS, retrieve, sweep, uploadOk, User } from "../ops/lifecycle_suite.ts";
import { withTempDir } from "../helpers/files.ts";

Deno.test("deals: only the owner deletes a deal (404 otherwise, 403 without pin); again changes nothing", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({ clock, args: LIFECYCLE_ARGS });
  const owner = await User.signUp(server, "owner@example.org");
  const other = await User.signUp(server, "other@example.org");
  const deal = await owner.upload(seededBytes(1000, 1));
  const sponsored = await uploadOk(server, seededBytes(1000, 2));
  for (const id of [deal.dealId, sponsored.dealId, "stage-nosuchdeal"]) {
    const answer = await other.deleteDeal(id);
    assertEquals([answer.status, (await errorOf(answer)).error], [404, "not_found"], id);
  }
  const putOnly = (await signup(server, { email: "owner@example.org", scopes: ["put", "list"] }))
    .token;
  const noPin = await server.get(`/api/deals/${deal.dealId}`, {
    method: "DELETE",
    headers: bearer(putOnly),
  });
  assertEquals([noPin.status, (await errorOf(noPin)).error], [403, "insufficient_scope"]);
  const first = await (await owner.deleteDeal(deal.dealId)).json();
  clock.advance(60_000);
  const again = await owner.deleteDeal(deal.dealId);
  assertEquals(again.status, 200);
  assertEquals(await again.json(), first, "the first deletion's time stands");
  assertEquals(first.state, "deleted");
});

Deno.test("deals: deleting gives no quota back; the bytes stay public until the sweep", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({ clock, args: LIFECYCLE_ARGS });
  const user = await User.signUp(server, "a@example.org");
  const deal = await user.upload(seededBytes(4096, 3));
  const usage = async () =>
    (await (await server.get("/api/usage", { headers: bearer(user.token) })).json()).days;
  const before = await usage();
  assertEquals((await user.deleteDeal(deal.dealId)).status, 200);
  assertEquals(await usage(), before);
  assertEquals(before.at(-1).bytes, 4096);
  assertEquals((await retrieve(server, deal.cid)).status, 200);
});

Deno.test("files: ?state= lists the deals in that state now, page by page", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({ clock, args: LIFECYCLE_ARGS });
  const user = await User.signUp(server, "a@example.org");
  const deals = [];
  for (let i = 0; i < 6; i++) {
    deals.push(await user.upload(seededBytes(100, 10 + i)));
    clock.advance(DAY_MS);
  }
  // Ages 6..1 days; terms of 10 days: the first two end within 5 more days.
  clock.advance(5 * DAY_MS);
  assertEquals((await user.deleteDeal(deals[5].dealId)).status, 200);
  const pages = async (state: string) => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `state=${state}&limit=1${cursor ? `&cursor=${cursor}` : ""}`;
      const response = await server.get(`/api/files?${query}`, { headers: bearer(user.token) });
      const page = await response.json();
      ids.push(...page.files.map((f: { dealId: string; state: string }) => {
        assertEquals(f.state, state);
        return f.dealId;
      }));
      cursor = page.nextCursor;
    } while (cursor !== null);
    return ids;
  };
  const ids = deals.map((d) => d.dealId);
  assertEquals(await pages("expired"), [ids[1], ids[0]]);
  assertEquals(await pages("active"), [ids[4], ids[3], ids[2]]);
  assertEquals(await pages("deleted"), [ids[5]]);
});

Deno.test("healthz, metrics and the start-up summary show garbage collection", async () => {
  const clock = new FakeClock();
  await withTempDir("storage-gc-", async (dataDir) => {
    {
      await using server = await startTestServer({ clock, dataDir, args: LIFECYCLE_ARGS });
      const health = async () => (await (await server.get("/healthz")).json()).gc;
      assertEquals(await health(), {
        intervalHours: 6,
        graceDays: 2,
        running: false,
        lastSweep: null,
      });
      const first = await uploadOk(server, seededBytes(2000, 4));
      clock.advance(5 * DAY_MS);
      await uploadOk(server, seededBytes(3000, 5));
      clock.advance(7 * DAY_MS + 1000); // the first is past its grace period, the second not
      const metrics = async () => await (await server.get("/metrics")).text();
      assertMatch(await metrics(), /^storage_gc_backlog_pieces 1$/m);
      assertMatch(await metrics(), /^storage_gc_backlog_bytes 2000$/m);
      assertMatch(await metrics(), /^storage_gc_last_sweep_timestamp_seconds 0$/m);
      await sweep(server);
      const text = await metrics();
      assertMatch(text, /^storage_gc_removed_pieces_total\{kind="piece"\} 1$/m);
      assertMatch(text, /^storage_gc_removed_bytes_total\{kind="piece"\} 2000$/m);
      assertMatch(text, /^storage_gc_removed_pieces_total\{kind="orphan"\} 0$/m);
      assertMatch(text, /^storage_gc_sweeps_total 1$/m);
      assertMatch(text, /^storage_gc_last_sweep_timestamp_seconds 1796299201$/m);
      const last = (await health()).lastSweep;
      assertEquals(last, {
        startedAt: "2026-12-03T12:00:01Z",
        finishedAt: "2026-12-03T12:00:01Z",
        removedPieces: 1,
        removedBytes: 2000,
        removedOrphans: 0,
      });
      assertEquals((await retrieve(server, first.cid)).status, 410);
    }
    // A restart shows the last sweep in its start-up summary.
    await using again = await startTestServer({ clock, dataDir, args: LIFECYCLE_ARGS });
    const line = again.logs.find((log) => log.msg === "gc");
    assertOk(line, "a gc line in the summary");
    assertEquals(
      [line.intervalHours, line.graceDays, line.lastSweep, line.lastRemovedPieces],
      [6, 2, "2026-12-03T12:00:01Z", 1],
    );
  });
});

Deno.test("the server sweeps by itself every --gc-interval, and logs each sweep", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({
    clock,
    args: LIFECYCLE_ARGS,
    jobIntervals: { gc: 20 },
  });
  const deal = await uploadOk(server, seededBytes(1500, 6));
  clock.advance(12 * DAY_MS + 1000);
  // Retrieval answers 410 once the piece is marked; the sweep logs once it is done.
  await eventually(
    () => server.logs.some((log) => log.msg === "gc finished" && log.removedPieces === 1),
    "a background sweep that removed the piece, logged",
  );
  assertEquals((await retrieve(server, deal.cid)).status, 410);
});

Deno.test("a preflight allows DELETE, so browser code can delete deals", async () => {
  await using server = await startTestServer();
  const response = await server.get("/api/deals/x", { method: "OPTIONS" });
  await response.body?.cancel();
  assertMatch(response.headers.get("access-control-allow-methods") ?? "", /\bDELETE\b/);
});
