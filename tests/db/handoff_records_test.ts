/**
 * The hand-off's records (domain/handoff_records.ts), one conformance suite
 * run against both backends: SQLite in a data directory's database, and
 * PostgreSQL on a real server (a fresh database per test). Pieces and deals
 * come in through the catalog's own recordUpload, removals through the
 * lifecycle's beginRemovals, as the service makes them.
 */
import { assertEquals } from "../helpers/assert.ts";
import { withTempDir } from "../helpers/files.ts";
import { postgresAvailable, postgresForTests } from "../helpers/postgres.ts";
import { openDatabase } from "../../src/db/sqlite/database.ts";
import { SqliteCatalogRecords } from "../../src/db/sqlite/catalog_records.ts";
import { SqliteLifecycleRecords } from "../../src/db/sqlite/lifecycle_records.ts";
import { SqliteHandoffRecords } from "../../src/db/sqlite/handoff_records.ts";
import { PostgresDatabase } from "../../src/db/postgres/postgres_database.ts";
import { silentLogger } from "../../src/kernel/log.ts";
import { toRfc3339 } from "../../src/kernel/clock.ts";
import { pieceCidOfStream } from "../../src/kernel/piece_cid/mod.ts";
import type { CatalogRecords, DealRecord } from "../../src/domain/catalog_records.ts";
import type { LifecycleRecords } from "../../src/domain/lifecycle_records.ts";
import {
  HANDOFF_MAX_BYTES,
  HANDOFF_MIN_BYTES,
  HANDOFF_STATES,
  type HandoffCall,
  type HandoffPiece,
  type HandoffRecords,
  INELIGIBLE_REASON,
} from "../../src/domain/handoff_records.ts";

interface Backend {
  catalog: CatalogRecords;
  lifecycle: LifecycleRecords;
  handoffs: HandoffRecords;
}

type Open = (fn: (backend: Backend) => Promise<void>) => Promise<void>;

const DAY_MS = 86_400_000;
const NOW = Date.parse("2026-06-01T00:00:00Z");
const PROVIDER = "https://pdp.example.com";

const openSqlite: Open = (fn) =>
  withTempDir("handoff_records_", async (dir) => {
    const db = openDatabase({ path: `${dir}/storage.db` });
    try {
      await fn({
        catalog: new SqliteCatalogRecords(db),
        lifecycle: new SqliteLifecycleRecords(db),
        handoffs: new SqliteHandoffRecords(db),
      });
    } finally {
      db.close();
    }
  });

const openPostgres: Open = async (fn) => {
  await using test = await postgresForTests();
  const db = await PostgresDatabase.open({ url: test.url, logger: silentLogger });
  try {
    await fn({ catalog: db.catalog, lifecycle: db.lifecycle, handoffs: db.handoffs });
  } finally {
    await db.close();
  }
};

/** A real PieceCIDv2 (the catalog derives its v1 from it). */
const PIECE_CID_V2 = (await pieceCidOfStream(
  ReadableStream.from([new Uint8Array(300).fill(7)]),
)).cid;

let deals = 0;

interface StoreOptions {
  size?: number;
  /** The deal's end of term (default: in 10 days). */
  termEndsAt?: number;
  deletedAt?: number | null;
  pieceCidV2?: string | null;
  /** Whether the piece row is new (default) or stored already (another deal on it). */
  newPiece?: boolean;
}

/** Stores a piece (or a deal on a stored one) through the catalog; returns the deal's id. */
async function store(b: Backend, cid: string, options: StoreOptions = {}): Promise<string> {
  const size = options.size ?? 1000;
  const createdAt = toRfc3339(NOW - DAY_MS);
  const deal: DealRecord = {
    id: `deal${String(++deals).padStart(6, "0")}`,
    cid,
    tier: "token",
    ownerSub: "user1",
    ownerName: "user1@example.com",
    size,
    contentType: "application/octet-stream",
    filename: null,
    termDays: 10,
    createdAt,
    termEndsAt: toRfc3339(options.termEndsAt ?? NOW + 10 * DAY_MS),
    deletedAt: options.deletedAt == null ? null : toRfc3339(options.deletedAt),
  };
  await b.catalog.recordUpload({
    newPiece: options.newPiece === false ? null : {
      cid,
      size,
      sha256: null,
      contentType: "application/octet-stream",
      filename: null,
      createdAt,
      corruptAt: null,
      removedAt: null,
      pieceCidV2: options.pieceCidV2 ?? null,
    },
    deal,
    usage: { subject: "user1", day: createdAt.slice(0, 10), bytes: size },
  });
  return deal.id;
}

function cidsOf(pieces: readonly HandoffPiece[]): string[] {
  return pieces.map((piece) => piece.cid);
}

function call(id: string, kind: HandoffCall["kind"], openedAt: number): HandoffCall {
  return {
    id,
    provider: PROVIDER,
    kind,
    body: JSON.stringify({ id, pieces: ["x"] }),
    statusUrl: null,
    txHash: null,
    refusals: 0,
    reconcileUntil: null,
    openedAt,
  };
}

function handoffSuite(backend: string, open: Open, ignore: boolean): void {
  const test = (name: string, fn: (b: Backend) => Promise<void>) =>
    Deno.test({ name: `handoff records (${backend}): ${name}`, ignore, fn: () => open(fn) });

  test("enqueue queues the pieces an active deal keeps, and only those", async (b) => {
    await store(b, "bafkept");
    await store(b, "bafkexpired", { termEndsAt: NOW - DAY_MS });
    await store(b, "bafkdeleted", { deletedAt: NOW - 1000 });
    await store(b, "bafkdeletedlater", { deletedAt: NOW + 1000 });
    await store(b, "bafkendsnow", { termEndsAt: NOW });
    // Expired, then removed; a deal on its row afterwards does not make it stored.
    await store(b, "bafkremoved", { termEndsAt: NOW - 2 * DAY_MS });
    const marks = await b.lifecycle.beginRemovals(
      ["bafkremoved"],
      toRfc3339(NOW - DAY_MS),
      toRfc3339(NOW - DAY_MS),
    );
    assertEquals(marks.map((mark) => mark.cid), ["bafkremoved"]);
    await store(b, "bafkremoved", { newPiece: false });
    // An expired deal beside an active one: kept.
    await store(b, "bafktwodeals", { termEndsAt: NOW - DAY_MS });
    await store(b, "bafktwodeals", { newPiece: false });

    // Only the cids given, when given.
    assertEquals(
      await b.handoffs.enqueue({
        provider: PROVIDER,
        now: NOW,
        cids: ["bafkept", "bafkexpired", "bafknothere"],
        limit: 100,
      }),
      1,
    );
    // A scan, up to its limit, in cid order.
    assertEquals(await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 1, limit: 1 }), 1);
    assertEquals(await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 2, limit: 100 }), 1);
    assertEquals(await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 3, limit: 100 }), 0);
    const found = await b.handoffs.getMany([
      "bafkept",
      "bafkexpired",
      "bafkdeleted",
      "bafkdeletedlater",
      "bafkendsnow",
      "bafkremoved",
      "bafktwodeals",
    ]);
    assertEquals([...found.keys()].sort(), ["bafkdeletedlater", "bafkept", "bafktwodeals"]);
    assertEquals(found.get("bafkept"), {
      cid: "bafkept",
      provider: PROVIDER,
      state: "queued",
      size: 1000,
      pieceCidV2: null,
      dataSetId: null,
      pieceId: null,
      txHash: null,
      error: null,
      callId: null,
      queuedAt: NOW,
      updatedAt: NOW,
    });
    assertEquals(found.get("bafkdeletedlater")?.queuedAt, NOW + 1);
    assertEquals(found.get("bafktwodeals")?.queuedAt, NOW + 2);
    assertEquals(await b.handoffs.get("bafkexpired"), null);
    assertEquals((await b.handoffs.getMany([])).size, 0);
  });

  test("pieces outside the provider's size limits are recorded ineligible", async (b) => {
    await store(b, "bafksize1", { size: HANDOFF_MIN_BYTES - 1 });
    await store(b, "bafksize2", { size: HANDOFF_MIN_BYTES });
    await store(b, "bafksize3", { size: HANDOFF_MAX_BYTES });
    await store(b, "bafksize4", { size: HANDOFF_MAX_BYTES + 1 });
    assertEquals(await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 100 }), 4);
    const found = await b.handoffs.getMany(["bafksize1", "bafksize2", "bafksize3", "bafksize4"]);
    assertEquals(
      [...found.values()].map((p) => [p.cid, p.state, p.size, p.error]),
      [
        ["bafksize1", "ineligible", 126, INELIGIBLE_REASON],
        ["bafksize2", "queued", 127, null],
        ["bafksize3", "queued", 1_065_353_216, null],
        ["bafksize4", "ineligible", 1_065_353_217, INELIGIBLE_REASON],
      ],
    );
    // Ineligible is a hand-off too: no second row.
    assertEquals(await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 1, limit: 100 }), 0);
    assertEquals((await b.handoffs.get("bafksize1"))?.queuedAt, NOW);
  });

  test("a piece with a hand-off gets no second row; a removed one is queued anew", async (b) => {
    await store(b, "bafkagain");
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 100 });
    assertEquals(
      await b.handoffs.move(["bafkagain"], {
        from: ["queued"],
        to: "live",
        at: NOW + 1,
        dataSetId: 7,
        pieceId: 12,
        txHash: "0xadd",
      }),
      1,
    );
    for (const cids of [undefined, ["bafkagain"]]) {
      assertEquals(
        await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 2, cids, limit: 100 }),
        0,
      );
    }
    const live = await b.handoffs.get("bafkagain");
    assertEquals([live?.state, live?.queuedAt, live?.pieceId], ["live", NOW, 12]);
    // Removed at the provider (its deals had ended, say), then kept by a deal again.
    await b.handoffs.move(["bafkagain"], {
      from: ["live"],
      to: "removed",
      at: NOW + 3,
      txHash: "0xremove",
      error: "gone",
    });
    const other = "https://other-pdp.example.com";
    assertEquals(
      await b.handoffs.enqueue({ provider: other, now: NOW + 4, cids: ["bafkagain"], limit: 9 }),
      1,
    );
    assertEquals(await b.handoffs.get("bafkagain"), {
      cid: "bafkagain",
      provider: other,
      state: "queued",
      size: 1000,
      pieceCidV2: null,
      dataSetId: null,
      pieceId: null,
      txHash: null,
      error: null,
      callId: null,
      queuedAt: NOW + 4,
      updatedAt: NOW + 4,
    });
  });

  test("readyToPull takes queued pieces whose PieceCIDv2 is known, oldest first", async (b) => {
    await store(b, "bafkready2", { pieceCidV2: PIECE_CID_V2 });
    await store(b, "bafkready1", { pieceCidV2: PIECE_CID_V2 });
    await store(b, "bafkopaque");
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, cids: ["bafkready2"], limit: 9 });
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 1, limit: 9 });
    assertEquals(cidsOf(await b.handoffs.readyToPull(10)), ["bafkready2", "bafkready1"]);
    assertEquals(cidsOf(await b.handoffs.readyToPull(1)), ["bafkready2"]);
    assertEquals((await b.handoffs.get("bafkready1"))?.pieceCidV2, PIECE_CID_V2);
    await b.catalog.setPieceCidV2("bafkopaque", PIECE_CID_V2);
    assertEquals(
      cidsOf(await b.handoffs.readyToPull(10)),
      ["bafkready2", "bafkopaque", "bafkready1"],
    );
    // Only queued pieces.
    await b.handoffs.move(["bafkready2"], { from: ["queued"], to: "failed", at: NOW + 2 });
    assertEquals(cidsOf(await b.handoffs.readyToPull(10)), ["bafkopaque", "bafkready1"]);
  });

  test("openCall moves pieces into the call; closeCall frees them", async (b) => {
    for (const cid of ["bafkcall1", "bafkcall2", "bafkcall3"]) {
      await store(b, cid, { pieceCidV2: PIECE_CID_V2 });
    }
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 9 });
    const pull = call("call-pull", "pull", NOW + 10);
    await b.handoffs.openCall(pull, ["bafkcall2", "bafkcall1"], "pulling");
    const inCall = await b.handoffs.piecesOfCall("call-pull");
    assertEquals(cidsOf(inCall), ["bafkcall1", "bafkcall2"]);
    assertEquals(
      inCall.map((p) => [p.state, p.callId, p.updatedAt, p.queuedAt]),
      [["pulling", "call-pull", NOW + 10, NOW], ["pulling", "call-pull", NOW + 10, NOW]],
    );
    assertEquals(await b.handoffs.openCalls("pull"), [pull]);
    assertEquals(await b.handoffs.openCalls("add"), []);
    // Pieces in a call are nobody else's.
    assertEquals(cidsOf(await b.handoffs.readyToPull(10)), ["bafkcall3"]);
    assertEquals(await b.handoffs.idle("pulling", 10), []);
    assertEquals(cidsOf(await b.handoffs.inState("pulling", "", 10)), ["bafkcall1", "bafkcall2"]);

    await b.handoffs.setCallStatus("call-pull", "https://pdp.example.com/status/1", "0xabc");
    await b.handoffs.updateCall("call-pull", { refusals: 2, reconcileUntil: NOW + 60_000 });
    assertEquals(await b.handoffs.openCalls("pull"), [{
      ...pull,
      statusUrl: "https://pdp.example.com/status/1",
      txHash: "0xabc",
      refusals: 2,
      reconcileUntil: NOW + 60_000,
    }]);
    const create = call("call-create", "create", NOW + 5);
    const add = call("call-add", "add", NOW + 20);
    await b.handoffs.openCall(create, [], "queued");
    await b.handoffs.openCall(add, [], "adding");
    assertEquals(await b.handoffs.openCalls("create"), [create]);

    await b.handoffs.closeCall("call-pull", NOW + 30);
    await b.handoffs.closeCall("call-pull", NOW + 40);
    assertEquals(await b.handoffs.openCalls("pull"), []);
    assertEquals(await b.handoffs.piecesOfCall("call-pull"), []);
    const freed = await b.handoffs.idle("pulling", 10);
    assertEquals(
      freed.map((p) => [p.cid, p.state, p.callId, p.updatedAt]),
      [["bafkcall1", "pulling", null, NOW + 10], ["bafkcall2", "pulling", null, NOW + 10]],
    );
    assertEquals(await b.handoffs.openCalls("add"), [add]);
  });

  test("move moves only the pieces in its `from` states, and only the fields given", async (b) => {
    for (const cid of ["bafkmove1", "bafkmove2", "bafkmove3"]) await store(b, cid);
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 9 });
    assertEquals(await b.handoffs.move([], { from: ["queued"], to: "failed", at: NOW }), 0);
    assertEquals(
      await b.handoffs.move(["bafkmove1", "bafkmove2"], {
        from: ["pulling", "adding"],
        to: "live",
        at: NOW + 1,
      }),
      0,
    );
    assertEquals(
      await b.handoffs.move(["bafkmove1"], {
        from: ["queued"],
        to: "failed",
        at: NOW + 2,
        error: "refused",
        callId: "call-x",
      }),
      1,
    );
    assertEquals(
      await b.handoffs.move(["bafkmove1", "bafkmove2", "bafknothere"], {
        from: ["queued", "pulling"],
        to: "adding",
        at: NOW + 3,
        dataSetId: 5,
      }),
      1,
    );
    const [one, two, three] = [
      await b.handoffs.get("bafkmove1"),
      await b.handoffs.get("bafkmove2"),
      await b.handoffs.get("bafkmove3"),
    ];
    assertEquals(
      [one?.state, one?.error, one?.callId, one?.dataSetId, one?.updatedAt],
      ["failed", "refused", "call-x", null, NOW + 2],
    );
    assertEquals([two?.state, two?.dataSetId, two?.updatedAt], ["adding", 5, NOW + 3]);
    assertEquals([three?.state, three?.updatedAt], ["queued", NOW]);
    // Nulls given are set.
    assertEquals(
      await b.handoffs.move(["bafkmove1"], {
        from: ["failed"],
        to: "queued",
        at: NOW + 4,
        error: null,
        callId: null,
      }),
      1,
    );
    const again = await b.handoffs.get("bafkmove1");
    assertEquals([again?.state, again?.error, again?.callId], ["queued", null, null]);
  });

  test("unkept finds live pieces outside calls whose deals all ended", async (b) => {
    await store(b, "bafkstill", { termEndsAt: NOW + 10 * DAY_MS });
    await store(b, "bafkended", { termEndsAt: NOW + DAY_MS });
    const deleted = await store(b, "bafkgone", { termEndsAt: NOW + 10 * DAY_MS });
    await store(b, "bafkcalled", { termEndsAt: NOW + DAY_MS });
    await store(b, "bafkqueued", { termEndsAt: NOW + DAY_MS });
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 9 });
    await b.handoffs.move(["bafkstill", "bafkgone", "bafkcalled"], {
      from: ["queued"],
      to: "live",
      at: NOW + 1,
    });
    await b.handoffs.move(["bafkended"], { from: ["queued"], to: "live", at: NOW + 2 });
    await b.catalog.deleteDeal(deleted, toRfc3339(NOW + 1000));
    await b.handoffs.openCall(call("call-remove", "remove", NOW + 3), ["bafkcalled"], "live");
    assertEquals(cidsOf(await b.handoffs.unkept(NOW + 500, 10)), []);
    assertEquals(cidsOf(await b.handoffs.unkept(NOW + 2000, 10)), ["bafkgone"]);
    assertEquals(cidsOf(await b.handoffs.unkept(NOW + 2 * DAY_MS, 10)), [
      "bafkgone",
      "bafkended",
    ]);
    assertEquals(cidsOf(await b.handoffs.unkept(NOW + 2 * DAY_MS, 1)), ["bafkgone"]);
  });

  test("inState pages the pieces of a state by cid", async (b) => {
    for (const cid of ["bafkpage3", "bafkpage1", "bafkpage2", "bafkpage4"]) await store(b, cid);
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 9 });
    await b.handoffs.move(["bafkpage4"], { from: ["queued"], to: "failed", at: NOW });
    assertEquals(cidsOf(await b.handoffs.inState("queued", "", 2)), ["bafkpage1", "bafkpage2"]);
    assertEquals(cidsOf(await b.handoffs.inState("queued", "bafkpage2", 2)), ["bafkpage3"]);
    assertEquals(cidsOf(await b.handoffs.inState("failed", "", 2)), ["bafkpage4"]);
  });

  test("counts gives every state's pieces and bytes, and the oldest queued", async (b) => {
    const empty = await b.handoffs.counts();
    assertEquals(empty, {
      byState: HANDOFF_STATES.map((state) => ({ state, pieces: 0, bytes: 0 })),
      oldestQueuedAt: null,
    });
    await store(b, "bafkcount1", { size: 200 });
    await store(b, "bafkcount2", { size: 300 });
    await store(b, "bafkcount3", { size: 100 });
    await store(b, "bafkcount4", { size: 500 });
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 5, cids: ["bafkcount4"], limit: 9 });
    await b.handoffs.enqueue({ provider: PROVIDER, now: NOW + 7, limit: 9 });
    await b.handoffs.move(["bafkcount4"], { from: ["queued"], to: "live", at: NOW + 8 });
    const expected: Record<string, [number, number]> = {
      queued: [2, 500],
      ineligible: [1, 100],
      live: [1, 500],
    };
    assertEquals(await b.handoffs.counts(), {
      byState: HANDOFF_STATES.map((state) => ({
        state,
        pieces: expected[state]?.[0] ?? 0,
        bytes: expected[state]?.[1] ?? 0,
      })),
      oldestQueuedAt: NOW + 7,
    });
  });

  test("the data set is saved, and updated in place", async (b) => {
    assertEquals(await b.handoffs.dataSet(PROVIDER), null);
    const created = {
      provider: PROVIDER,
      clientDataSetId:
        "115792089237316195423570985008687907853269984665640564039457584007913129639935",
      dataSetId: null,
      callId: "call-create",
    };
    await b.handoffs.saveDataSet(created);
    assertEquals(await b.handoffs.dataSet(PROVIDER), created);
    const onChain = { ...created, dataSetId: 9_007_199_254, callId: null };
    await b.handoffs.saveDataSet(onChain);
    assertEquals(await b.handoffs.dataSet(PROVIDER), onChain);
    assertEquals(await b.handoffs.dataSet("https://other.example.com"), null);
  });
}

handoffSuite("sqlite", openSqlite, false);
handoffSuite("postgres", openPostgres, !postgresAvailable());

for (
  const [backend, open, ignore] of [
    ["sqlite", openSqlite, false],
    ["postgres", openPostgres, !postgresAvailable()],
  ] as const
) {
  Deno.test({
    name: `handoff records (${backend}): a piece a provider is pulling is not removable`,
    ignore,
    fn: () =>
      open(async (b) => {
        await store(b, "bafkpulled", { termEndsAt: NOW + DAY_MS });
        await store(b, "bafkidle", { termEndsAt: NOW + DAY_MS });
        await b.handoffs.enqueue({ provider: PROVIDER, now: NOW, limit: 9 });
        await b.handoffs.openCall(call("call-pull", "pull", NOW), ["bafkpulled"], "pulling");
        const endedBy = toRfc3339(NOW + 2 * DAY_MS);
        assertEquals(await b.lifecycle.removalBacklog(endedBy), { pieces: 1, bytes: 1000 });
        const marks = await b.lifecycle.beginRemovals(["bafkpulled", "bafkidle"], endedBy, endedBy);
        assertEquals(marks.map((m) => m.cid), ["bafkidle"]);
        // Pulled (live now): it may go.
        await b.handoffs.move(["bafkpulled"], { from: ["pulling"], to: "live", at: NOW + 1 });
        assertEquals(await b.lifecycle.removalBacklog(endedBy), { pieces: 1, bytes: 1000 });
      }),
  });
}

Deno.test({
  name: "handoff turn (postgres): one instance hands off at a time, whatever the sweep does",
  ignore: !postgresAvailable(),
  async fn() {
    await using test = await postgresForTests();
    const a = await PostgresDatabase.open({ url: test.url, logger: silentLogger });
    const b = await PostgresDatabase.open({ url: test.url, logger: silentLogger });
    try {
      const inner = await a.handoffTurn.tryRun(async () => ({
        otherHandoff: await b.handoffTurn.tryRun(() => Promise.resolve("b hands off")),
        sweep: await b.sweepTurn.tryRun(() => Promise.resolve("b sweeps")),
      }));
      assertEquals(inner, {
        ran: true,
        value: { otherHandoff: { ran: false }, sweep: { ran: true, value: "b sweeps" } },
      });
      // Released: the other instance takes its turn.
      assertEquals(await b.handoffTurn.tryRun(() => Promise.resolve(1)), { ran: true, value: 1 });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  },
});
