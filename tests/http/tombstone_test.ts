/**
 * Stored bytes under a cid never change, even after removal (decisions:
 * "Holding up, second pass"): a removed piece leaves a tombstone (its cid,
 * size and SHA-256), the same bytes bring it back, and other bytes are 409
 * cid_conflict, as for a stored piece. Before, B uploaded under A's opaque
 * cid after A's deal ended and gc ran was served under A's strong ETag.
 */
import { assertEquals } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import { DAY_MS, LIFECYCLE_ARGS, sweep } from "../ops/lifecycle_suite.ts";

Deno.test("tombstones: after gc, other bytes under a removed opaque cid are 409; the same bytes bring it back", async () => {
  const clock = new FakeClock();
  await using server = await startTestServer({ clock, args: LIFECYCLE_ARGS });
  const cid = "bafktombstone001";
  const a = seededBytes(6000, 1);
  assertEquals((await server.upload(cid, a)).status, 200);
  const etag = (await server.get(`/p/${cid}`, { method: "HEAD" })).headers.get("etag");
  clock.advance(12 * DAY_MS + 1000); // the deal's 10 days and the 2 days of grace
  assertEquals((await sweep(server)).removedPieces, 1);
  const gone = await server.get(`/p/${cid}`);
  await gone.body?.cancel();
  assertEquals(gone.status, 410);
  // Other bytes: refused, nothing stored; the same size but other bytes too.
  for (const other of [seededBytes(6000, 2), seededBytes(7000, 1)]) {
    const refused = await server.upload(cid, other);
    assertEquals([refused.status, (await errorOf(refused)).error], [409, "cid_conflict"]);
  }
  const still = await server.get(`/p/${cid}`);
  await still.body?.cancel();
  assertEquals(still.status, 410);
  // The same bytes: stored again, under the same ETag.
  assertEquals((await server.upload(cid, a)).status, 200);
  const back = await server.get(`/p/${cid}`);
  assertEquals([back.status, back.headers.get("etag")], [200, etag]);
  assertEquals(new Uint8Array(await back.arrayBuffer()), a);
});
