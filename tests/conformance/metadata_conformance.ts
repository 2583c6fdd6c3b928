/**
 * The conformance suite every metadata backend must pass (SQLite and
 * PostgreSQL): call it from a backend's test file with a factory for fresh,
 * empty metadata on a fake clock. The same records, the same answers, the
 * same atomicity, whichever database is underneath.
 */
import { assertEquals, assertOk, assertRejects } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { turnsDuring } from "../helpers/wait.ts";
import type { Metadata } from "../../src/backends/metadata.ts";
import type { DealRecord, PieceRecord } from "../../src/domain/catalog_records.ts";
import type { TokenRecord } from "../../src/domain/auth_records.ts";
import { runLifecycleConformance } from "./lifecycle_conformance.ts";
import { runPieceCidConformance } from "./piece_cid_conformance.ts";
import { runResumableConformance } from "./resumable_conformance.ts";

export interface MetadataFixture extends AsyncDisposable {
  metadata: Metadata;
  clock: FakeClock;
}

const DAY = "2026-11-21";
const CREATED = "2026-11-21T12:00:00Z";

function pieceOf(cid: string, size = 10, sha256: string | null = "a".repeat(64)): PieceRecord {
  return {
    cid,
    size,
    sha256,
    contentType: "application/octet-stream",
    filename: null,
    createdAt: CREATED,
    corruptAt: null,
    removedAt: null,
    pieceCidV2: null,
  };
}

function dealOf(id: string, cid: string, size = 10, ownerSub: string | null = "u1"): DealRecord {
  return {
    id,
    cid,
    tier: "token",
    ownerSub,
    ownerName: ownerSub === null ? null : "a@b.org",
    size,
    contentType: "application/octet-stream",
    filename: "f.bin",
    termDays: 30,
    createdAt: CREATED,
    termEndsAt: "2026-12-21T12:00:00Z",
    deletedAt: null,
  };
}

function tokenOf(jti: string, sub: string, issuedAt: string): Omit<TokenRecord, "revokedAt"> {
  return {
    jti,
    sub,
    email: "a@b.org",
    wallet: null,
    label: "ci",
    scopes: ["put", "get"],
    quotaMb: 512,
    issuedAt,
    expiresAt: "2027-01-01T00:00:00Z",
  };
}

export function runMetadataConformance(
  name: string,
  fixture: () => Promise<MetadataFixture>,
  options: { ignore?: boolean } = {},
): void {
  const test = (title: string, fn: (f: MetadataFixture) => Promise<void>) =>
    Deno.test({
      name: `metadata ${name}: ${title}`,
      ignore: options.ignore,
      fn: async () => {
        await using f = await fixture();
        await fn(f);
      },
    });

  runLifecycleConformance(test);
  runPieceCidConformance(test);
  runResumableConformance(test);

  test("an upload records its piece, deal and usage together", async ({ metadata }) => {
    const { catalog } = metadata;
    assertEquals(await catalog.getPiece("bafkone"), null);
    await catalog.recordUpload({
      newPiece: pieceOf("bafkone", 10),
      deal: dealOf("d001", "bafkone", 10),
      usage: { subject: "user:u1", day: DAY, bytes: 10 },
    });
    // A second deal of the same bytes: no new piece, the counter grows.
    await catalog.recordUpload({
      newPiece: null,
      deal: dealOf("d002", "bafkone", 10),
      usage: { subject: "user:u1", day: DAY, bytes: 10 },
    });
    assertEquals({ ...await catalog.getPiece("bafkone") }, pieceOf("bafkone", 10));
    assertEquals({ ...await catalog.getDeal("d002") }, dealOf("d002", "bafkone", 10));
    assertEquals(await catalog.usedBytes("user:u1", DAY), 20);
    assertEquals(await catalog.usedBytes("user:u1", "2026-11-22"), 0);
    assertEquals(await catalog.usageBetween("user:u1", "2026-11-01", "2026-11-30"), [
      { subject: "user:u1", day: DAY, bytes: 20, uploads: 2 },
    ]);
    assertEquals(await catalog.storedTotals(), { pieces: 1, bytes: 10 });
  });

  test("a failed upload record leaves nothing behind", async ({ metadata }) => {
    const { catalog } = metadata;
    await catalog.recordUpload({
      newPiece: pieceOf("bafkfirst"),
      deal: dealOf("d001", "bafkfirst"),
      usage: { subject: "user:u1", day: DAY, bytes: 10 },
    });
    // The deal id is taken: the piece and the counter must not change either.
    await assertRejects(() =>
      catalog.recordUpload({
        newPiece: pieceOf("bafksecond"),
        deal: dealOf("d001", "bafksecond"),
        usage: { subject: "user:u1", day: DAY, bytes: 10 },
      }), /./);
    assertEquals(await catalog.getPiece("bafksecond"), null);
    assertEquals(await catalog.usedBytes("user:u1", DAY), 10);
    assertEquals(await catalog.storedTotals(), { pieces: 1, bytes: 10 });
  });

  test("a digest is set once and never replaced", async ({ metadata }) => {
    const { catalog } = metadata;
    await catalog.recordUpload({
      newPiece: pieceOf("bafknodigest", 10, null),
      deal: dealOf("d001", "bafknodigest"),
      usage: { subject: "ip:1", day: DAY, bytes: 10 },
    });
    assertEquals(await catalog.piecesWithoutSha256(), ["bafknodigest"]);
    await catalog.setPieceSha256("bafknodigest", "b".repeat(64));
    await catalog.setPieceSha256("bafknodigest", "c".repeat(64));
    assertEquals((await catalog.getPiece("bafknodigest"))?.sha256, "b".repeat(64));
    assertEquals(await catalog.piecesWithoutSha256(), []);
  });

  test("pieces page in bytewise cid order", async ({ metadata }) => {
    const { catalog } = metadata;
    // Upper case sorts before lower case bytewise (a locale collation would interleave them).
    const cids = ["bafkb", "bafkA", "bafka", "bafkZ", "bafkc"];
    for (const [i, cid] of cids.entries()) {
      await catalog.recordUpload({
        newPiece: pieceOf(cid),
        deal: dealOf(`d00${i}`, cid),
        usage: { subject: "ip:1", day: DAY, bytes: 10 },
      });
    }
    const seen: string[] = [];
    for (let cursor = "", page; (page = await catalog.piecesAfter(cursor, 2)).length > 0;) {
      seen.push(...page.map((p) => p.cid));
      cursor = page.at(-1)!.cid;
    }
    assertEquals(seen, ["bafkA", "bafkZ", "bafka", "bafkb", "bafkc"]);
  });

  test("corrupt marks: set once, polled in order, cleared only as seen, gone on repair", async ({ metadata }) => {
    const { catalog } = metadata;
    for (const [i, cid] of ["bafkx", "bafky"].entries()) {
      await catalog.recordUpload({
        newPiece: pieceOf(cid),
        deal: dealOf(`d00${i}`, cid),
        usage: { subject: "ip:1", day: DAY, bytes: 10 },
      });
    }
    assertEquals(await catalog.markPieceCorrupt("bafky", "2026-11-21T13:00:00Z", "digest"), true);
    assertEquals(await catalog.markPieceCorrupt("bafky", "2026-11-21T14:00:00Z", "digest"), false);
    assertEquals(await catalog.markPieceCorrupt("bafkx", "2026-11-21T13:30:00Z", "missing"), true);
    assertEquals((await catalog.getPiece("bafky"))?.corruptAt, "2026-11-21T13:00:00Z");
    const marks = await catalog.corruptMarksAfter(0);
    assertEquals(marks.map((m) => m.cid), ["bafky", "bafkx"], "oldest mark first");
    assertEquals(await catalog.corruptMarksAfter(marks[0].mark), [marks[1]]);
    assertEquals(await catalog.corruptPieceCids(), ["bafkx", "bafky"]);
    assertEquals(await catalog.clearPieceCorrupt("bafky", "2026-11-21T14:00:00Z"), false);
    assertEquals(await catalog.clearPieceCorrupt("bafky", "2026-11-21T13:00:00Z"), true);
    await catalog.recordUpload({
      newPiece: null,
      repairedPiece: { cid: "bafkx", sha256: "d".repeat(64) },
      deal: dealOf("d009", "bafkx"),
      usage: { subject: "ip:1", day: DAY, bytes: 10 },
    });
    const repaired = await catalog.getPiece("bafkx");
    assertEquals([repaired?.corruptAt, repaired?.sha256], [null, "d".repeat(64)]);
    assertEquals(await catalog.corruptPieceCids(), []);
    // A new mark after a clear is new to a poller.
    await catalog.markPieceCorrupt("bafky", "2026-11-21T15:00:00Z", "digest");
    assertEquals((await catalog.corruptMarksAfter(marks[1].mark)).map((m) => m.cid), ["bafky"]);
  });

  test("block index: written with the upload, found by multihash, kept once, hidden when corrupt", async ({ metadata }) => {
    const { catalog, blocks } = metadata;
    const a = Uint8Array.of(0x12, 0x20, ...new Uint8Array(32).fill(1));
    const b = Uint8Array.of(0x12, 0x20, ...new Uint8Array(32).fill(2));
    // Offsets past 2^32: a block deep in a large CAR.
    await catalog.recordUpload({
      newPiece: pieceOf("bafkcar1", 6_000_000_000),
      deal: dealOf("d001", "bafkcar1"),
      usage: { subject: "ip:1", day: DAY, bytes: 10 },
      blocks: [
        { multihash: a, offset: 59, length: 1024 },
        { multihash: b, offset: 5_000_000_000, length: 0 },
        { multihash: a, offset: 2000, length: 1024 }, // a duplicate in the same CAR: first kept
      ],
    });
    assertEquals(await blocks.findBlock(a), { pieceCid: "bafkcar1", offset: 59, length: 1024 });
    assertEquals(await blocks.findBlock(b), {
      pieceCid: "bafkcar1",
      offset: 5_000_000_000,
      length: 0,
    });
    assertEquals(await blocks.findBlock(Uint8Array.of(0x12, 0x20, ...new Uint8Array(32))), null);
    assertEquals(await blocks.countBlocks("bafkcar1"), 2);
    // A failed record indexes nothing.
    await assertRejects(() =>
      catalog.recordUpload({
        newPiece: pieceOf("bafkcar2"),
        deal: dealOf("d001", "bafkcar2"),
        usage: { subject: "ip:1", day: DAY, bytes: 10 },
        blocks: [{ multihash: b, offset: 1, length: 1 }],
      }), /./);
    assertEquals(await blocks.countBlocks("bafkcar2"), 0);
    // The same block in a second piece; a re-upload of the first indexes nothing twice.
    await catalog.recordUpload({
      newPiece: pieceOf("bafkcar3"),
      deal: dealOf("d003", "bafkcar3"),
      usage: { subject: "ip:1", day: DAY, bytes: 10 },
      blocks: [{ multihash: a, offset: 7, length: 1024 }],
    });
    await catalog.recordUpload({
      newPiece: null,
      deal: dealOf("d004", "bafkcar1"),
      usage: { subject: "ip:1", day: DAY, bytes: 10 },
      blocks: [{ multihash: a, offset: 59, length: 1024 }],
    });
    assertEquals(await blocks.countBlocks("bafkcar1"), 2);
    // A corrupt piece's blocks are not served; the other piece still holds the block.
    await catalog.markPieceCorrupt("bafkcar1", "2026-11-21T13:00:00Z", "digest");
    assertEquals(await blocks.findBlock(a), { pieceCid: "bafkcar3", offset: 7, length: 1024 });
    assertEquals(await blocks.findBlock(b), null);
  });

  test("block index: a CAR of many blocks is indexed while the event loop turns", async ({ metadata }) => {
    const { catalog, blocks } = metadata;
    const count = 100_000;
    function* locations() {
      for (let i = 0; i < count; i++) {
        const multihash = Uint8Array.of(0x12, 0x20, ...new Uint8Array(32));
        new DataView(multihash.buffer).setUint32(2, i);
        yield { multihash, offset: i * 10, length: 10 };
      }
    }
    // Timer turns that run while the commit is under way: none if it holds the loop throughout.
    const turns = await turnsDuring(() =>
      catalog.recordUpload({
        newPiece: pieceOf("bafkmanyblocks"),
        deal: dealOf("d101", "bafkmanyblocks"),
        usage: { subject: "ip:1", day: DAY, bytes: 10 },
        blocks: locations(),
      })
    );
    assertOk(turns > 1, `the event loop turned ${turns} times while ${count} blocks were indexed`);
    assertEquals(await blocks.countBlocks("bafkmanyblocks"), count);
    const last = [...locations()].at(-1)!;
    assertEquals(await blocks.findBlock(last.multihash), {
      pieceCid: "bafkmanyblocks",
      offset: last.offset,
      length: 10,
    });
  });

  test("deals page newest first per owner and extend", async ({ metadata }) => {
    const { catalog } = metadata;
    for (const id of ["d001", "d002", "d003"]) {
      await catalog.recordUpload({
        newPiece: id === "d001" ? pieceOf("bafkdeals") : null,
        deal: dealOf(id, "bafkdeals"),
        usage: { subject: "user:u1", day: DAY, bytes: 10 },
      });
    }
    await catalog.recordUpload({
      newPiece: null,
      deal: dealOf("d004", "bafkdeals", 10, "someone-else"),
      usage: { subject: "user:u2", day: DAY, bytes: 10 },
    });
    const first = await catalog.listDeals("u1", { beforeId: null, limit: 2 });
    assertEquals(first.map((d) => d.id), ["d003", "d002"]);
    const next = await catalog.listDeals("u1", { beforeId: "d002", limit: 2 });
    assertEquals(next.map((d) => d.id), ["d001"]);
    await catalog.extendDeal("d001", 10, "2026-12-31T12:00:00Z");
    const extended = await catalog.getDeal("d001");
    assertEquals([extended?.termDays, extended?.termEndsAt], [40, "2026-12-31T12:00:00Z"]);
    assertEquals(await catalog.getDeal("nope"), null);
  });

  test("tokens: issued, listed newest first, revoked once", async ({ metadata }) => {
    const { tokens } = metadata;
    await tokens.insert(tokenOf("j1", "s1", "2026-11-21T10:00:00Z"));
    await tokens.insert(tokenOf("j2", "s1", "2026-11-21T11:00:00Z"));
    await tokens.insert({
      ...tokenOf("j3", "s2", "2026-11-21T09:00:00Z"),
      email: null,
      wallet: "0x0000000000000000000000000000000000000001",
      quotaMb: null,
    });
    assertEquals((await tokens.list({ sub: "s1" })).map((t) => t.jti), ["j2", "j1"]);
    assertEquals((await tokens.list()).map((t) => t.jti), ["j2", "j1", "j3"]);
    assertEquals(await tokens.get("j1"), {
      ...tokenOf("j1", "s1", "2026-11-21T10:00:00Z"),
      revokedAt: null,
    });
    assertEquals((await tokens.get("j3"))?.wallet, "0x0000000000000000000000000000000000000001");
    assertEquals(await tokens.revocationOf("j1"), null);
    assertEquals(await tokens.revocationOf("unknown"), "unknown");
    await tokens.revoke("j1", "2026-11-21T12:00:00Z");
    await tokens.revoke("j1", "2026-11-21T13:00:00Z");
    assertEquals(await tokens.revocationOf("j1"), "2026-11-21T12:00:00Z");
    // A token with both an e-mail and a wallet is not a token this service issues.
    await assertRejects(() =>
      tokens.insert({
        ...tokenOf("j4", "s1", CREATED),
        wallet: "0x00000000000000000000000000000000000000aa",
      }), /./);
  });

  test("signup codes: one per address and client, tries counted, redeemed once", async ({ metadata }) => {
    const codes = metadata.signupCodes;
    const record = {
      email: "a@b.org",
      clientKey: "v4:192.0.2.1",
      codeHash: "h1",
      label: "ci",
      scopes: ["put" as const],
      quotaMb: 10,
      createdAt: CREATED,
      expiresAt: "2026-11-21T12:15:00Z",
      attempts: 0,
    };
    const other = { ...record, clientKey: "v6:2001:db8:0:1::/64", codeHash: "o1" };
    await codes.put(record);
    await codes.put(other);
    await codes.put({ ...record, codeHash: "h2", attempts: 2 });
    await codes.countAttempt("a@b.org", record.clientKey);
    assertEquals(await codes.get("a@b.org", record.clientKey), {
      ...record,
      codeHash: "h2",
      attempts: 3,
    });
    assertEquals(await codes.get("a@b.org", other.clientKey), other, "another client's code");
    await codes.deleteCode("a@b.org", record.clientKey, "h1");
    assertOk(await codes.get("a@b.org", record.clientKey) !== null, "only the named code goes");
    assertEquals(await codes.delete("a@b.org", record.clientKey), true);
    assertEquals(await codes.delete("a@b.org", record.clientKey), false);
    assertEquals(await codes.get("a@b.org", other.clientKey), other, "the other client's stays");
    await codes.put(record);
    await codes.purgeExpired("2026-11-21T12:15:00Z");
    assertEquals(await codes.get("a@b.org", record.clientKey), null);
    assertEquals(await codes.get("a@b.org", other.clientKey), null);
  });

  test("wallet nonces: live until spent or expired, spent once", async ({ metadata }) => {
    const nonces = metadata.walletNonces;
    await nonces.insert("n1", 2_000);
    await nonces.insert("n2", 1_000);
    assertEquals(await nonces.isLive("n1", 1_500), true);
    assertEquals(await nonces.isLive("n2", 1_500), false);
    assertEquals(await nonces.consume("n2", 1_500), false, "expired");
    const spends = await Promise.all([nonces.consume("n1", 1_500), nonces.consume("n1", 1_500)]);
    assertEquals(spends.filter(Boolean).length, 1, "one of two racing spends wins");
    assertEquals(await nonces.pruneExpired(1_500), 1);
  });

  test("sessions: a hash finds its token's jti until it ends or expires", async ({ metadata }) => {
    const sessions = metadata.sessions;
    const hash = (c: string) => c.repeat(64);
    await sessions.insert({ idHash: hash("a"), jti: "jti-a", expiresMs: 2_000 });
    await sessions.insert({ idHash: hash("b"), jti: "jti-b", expiresMs: 1_000 });
    assertEquals(await sessions.jtiOf(hash("a"), 1_500), "jti-a");
    assertEquals(await sessions.jtiOf(hash("b"), 1_500), null, "expired");
    assertEquals(await sessions.jtiOf(hash("c"), 1_500), null, "unknown");
    assertEquals(await sessions.pruneExpired(1_500), 1);
    assertEquals(await sessions.delete(hash("a")), true);
    assertEquals(await sessions.delete(hash("a")), false);
    assertEquals(await sessions.jtiOf(hash("a"), 1_500), null, "ended");
  });

  test("upload links: found until spent or expired, spent once", async ({ metadata }) => {
    const links = metadata.uploadLinks;
    const link = {
      idHash: "a".repeat(64),
      jti: "jti-a",
      cid: "bafklink",
      size: 3_000_000_000,
      contentType: "text/plain; charset=utf-8",
      filename: null,
      expiresMs: 2_000,
    };
    await links.insert(link);
    await links.insert({ ...link, idHash: "b".repeat(64), filename: "b.txt", expiresMs: 1_000 });
    assertEquals(await links.get(link.idHash, 1_500), link);
    assertEquals(await links.get("b".repeat(64), 1_500), null, "expired");
    assertEquals(await links.consume("b".repeat(64), 1_500), false, "expired");
    const spends = await Promise.all([
      links.consume(link.idHash, 1_500),
      links.consume(link.idHash, 1_500),
    ]);
    assertEquals(spends.filter(Boolean).length, 1, "one of two racing spends wins");
    assertEquals(await links.get(link.idHash, 1_500), null, "spent");
    assertEquals(await links.pruneExpired(1_500), 1);
  });

  test("cap ledger: parallel reservations never pass the cap together", async ({ metadata }) => {
    const ledger = metadata.capLedger;
    const results = await Promise.all(
      Array.from({ length: 30 }, () => ledger.reserve("ip:cap", 1024, 10 * 1024)),
    );
    assertEquals(results.filter((r) => r.ok).length, 10);
    assertEquals(await ledger.reservedTotal(), 10 * 1024);
    const refused = results.find((r) => !r.ok)!;
    assertEquals(refused.status.remainingBytes, 0);
    const status = await ledger.status("ip:cap", 10 * 1024);
    assertEquals([status.usedBytes, status.reservedBytes, status.day], [0, 10 * 1024, DAY]);
    for (const r of results) if (r.ok) await r.reservation.release();
    // Idempotent: a second release gives nothing back twice.
    for (const r of results) if (r.ok) await r.reservation.release();
    assertEquals(await ledger.reservedTotal(), 0);
    assertEquals((await ledger.status("ip:cap", 10 * 1024)).remainingBytes, 10 * 1024);
    // Reservation-only days are not usage.
    assertEquals(await metadata.catalog.usageBetween("ip:cap", DAY, DAY), []);
  });

  test("cap ledger: used bytes count against the cap; a new UTC day starts fresh", async ({ metadata, clock }) => {
    const { capLedger: ledger, catalog } = metadata;
    await catalog.recordUpload({
      newPiece: pieceOf("bafkused", 6000),
      deal: dealOf("d001", "bafkused", 6000),
      usage: { subject: "user:u1", day: DAY, bytes: 6000 },
    });
    const refused = await ledger.reserve("user:u1", 5000, 10_000);
    assertEquals([refused.ok, refused.status.usedBytes, refused.status.remainingBytes], [
      false,
      6000,
      4000,
    ]);
    const taken = await ledger.reserve("user:u1", 4000, 10_000);
    assertOk(taken.ok);
    assertEquals(taken.status.remainingBytes, 0);
    await taken.reservation.release();
    clock.set("2026-11-22T00:00:01Z");
    const tomorrow = await ledger.reserve("user:u1", 10_000, 10_000);
    assertOk(tomorrow.ok);
    assertEquals(tomorrow.reservation.day, "2026-11-22");
    await tomorrow.reservation.release();
  });

  test("cap ledger: the deal's commit moves a reservation's bytes from reserved to used at once", async ({ metadata }) => {
    const { capLedger: ledger, catalog } = metadata;
    const first = await ledger.reserve("ip:settle", 1024, 2048);
    const second = await ledger.reserve("ip:settle", 1024, 2048);
    assertOk(first.ok && second.ok);
    await catalog.recordUpload({
      newPiece: pieceOf("bafksettle", 1024),
      deal: dealOf("d001", "bafksettle", 1024),
      usage: { subject: "ip:settle", day: DAY, bytes: 1024 },
      reservation: first.reservation,
    });
    // Not counted twice: used 1 KiB, reserved only the other upload's 1 KiB.
    const status = await ledger.status("ip:settle", 2048);
    assertEquals([status.usedBytes, status.reservedBytes], [1024, 1024]);
    assertEquals(await ledger.reservedTotal(), 1024);
    // The release that follows every upload gives nothing back a second time.
    await first.reservation.release();
    assertEquals(await ledger.reservedTotal(), 1024);
    await second.reservation.release();
    assertEquals((await ledger.status("ip:settle", 2048)).remainingBytes, 1024);
  });

  test("cid locks: one commit per cid at a time, different cids in parallel", async ({ metadata }) => {
    const { cidLocks } = metadata;
    const events: string[] = [];
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => releaseFirst = resolve);
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => firstStarted = resolve);
    const first = cidLocks.run("bafklock", async () => {
      events.push("first in");
      firstStarted();
      await firstHolds;
      events.push("first out");
    });
    await started;
    const second = cidLocks.run("bafklock", () => {
      events.push("second in");
      return Promise.resolve();
    });
    // Another cid does not wait for the held one.
    await cidLocks.run("bafkother", () => {
      events.push("other");
      return Promise.resolve();
    });
    releaseFirst();
    await Promise.all([first, second]);
    assertEquals(events, ["first in", "other", "first out", "second in"]);
    // A throwing holder releases the lock too.
    await assertRejects(
      () => cidLocks.run("bafklock", () => Promise.reject(new Error("boom"))),
      /boom/,
    );
    assertEquals(await cidLocks.run("bafklock", () => Promise.resolve(7)), 7);
  });

  test("health says which backend answers", async ({ metadata }) => {
    const health = await metadata.health();
    assertEquals([health.ok, health.persistent, health.backend], [true, true, metadata.backend]);
  });
}
