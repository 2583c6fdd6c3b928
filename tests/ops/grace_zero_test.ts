/**
 * docs/operations.md ("When a piece goes") says `--retention-grace-days 0` is allowed and means no
 * grace: the next sweep removes the piece of a deal that ended, and `/p/{cid}` answers 410 right
 * after. The test starts the real server with the flags of the doc's own `task start` line (its
 * clock a FakeClock, the sweep the server's own) and checks both ends: a deal deleted and a deal
 * that reaches its term, each swept at the very instant it ended. A server that refused 0, or took
 * it for the default 7 days, keeps both pieces.
 */
import { assertEquals } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { blockAfter, commandOf } from "../helpers/doc_blocks.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { startTestServer } from "../helpers/server.ts";
import { retrieve, sweep, User } from "./lifecycle_suite.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The server flags of the `task start` line the docs show after a marker. */
async function documentedStartFlags(marker: string): Promise<string[]> {
  const docs = await Deno.readTextFile(`${ROOT}docs/operations.md`);
  const command = commandOf(blockAfter(docs, marker, "sh")).replace(/\s+#.*$/, "");
  const [, flags] = command.split(" task start ");
  return flags.trim().split(/\s+/);
}

Deno.test("docs: --retention-grace-days 0 removes an ended deal's piece at the next sweep (410)", async () => {
  const args = await documentedStartFlags("**When a piece goes.**");
  assertEquals(args, ["--retention-grace-days", "0"]);
  const clock = new FakeClock("2026-11-21T12:00:00Z");
  await using server = await startTestServer({ clock, args });
  const user = await User.signUp(server, "grace@example.org");
  const kept = await user.upload(seededBytes(5000, 41));
  const deleted = await user.upload(seededBytes(4000, 42));
  assertEquals((await user.deleteDeal(deleted.dealId)).status, 200);
  const first = await sweep(server);
  assertEquals(first.removedPieces, 1, "the deleted deal's piece, at the instant of the deletion");
  assertEquals(await retrieve(server, deleted.cid), { status: 410, error: "gone" });
  assertEquals((await retrieve(server, kept.cid)).status, 200, "an active deal keeps its piece");

  const termEndsAt = Date.parse((await user.deal(kept.dealId)).termEndsAt);
  clock.set(new Date(termEndsAt - 1000).toISOString());
  assertEquals((await sweep(server)).removedPieces, 0, "a second before its term ends");
  clock.advance(1000);
  const second = await sweep(server);
  assertEquals([second.removedPieces, second.removedBytes], [1, 5000]);
  assertEquals(await retrieve(server, kept.cid), { status: 410, error: "gone" });
});
