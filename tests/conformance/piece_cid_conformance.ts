/**
 * The pieces' PieceCIDv2 and v1, a part of the metadata conformance suite
 * every backend passes (metadata_conformance.ts calls it): recorded at
 * upload or set once later and never replaced, the pieces still without one
 * (removed ones aside), a piece found by either form whatever it is stored
 * under (a servable one first), and a piece brought back taking its new one.
 */
import { assertEquals } from "../helpers/assert.ts";
import type { MetadataFixture } from "./metadata_conformance.ts";
import type { DealRecord, PieceRecord } from "../../src/domain/catalog_records.ts";
import type { Metadata } from "../../src/backends/metadata.ts";
import { pieceCidV1, pieceCidV2 } from "../../src/kernel/piece_cid/cid_codec.ts";
import { deal as lifecycleDeal, piece as lifecyclePiece } from "./lifecycle_conformance.ts";

const DAY = "2026-11-21";
const CREATED = "2026-11-21T12:00:00Z";

/** A PieceCIDv2 and its v1 of a made-up root (the records check neither). */
function cidsOf(seed: number): { v2: string; v1: string } {
  const root = new Uint8Array(32).fill(seed);
  return { v2: pieceCidV2(root, 10, 1000 + seed), v1: pieceCidV1(root) };
}

function piece(cid: string, pieceCidV2: string | null, createdAt = CREATED): PieceRecord {
  return { ...lifecyclePiece(cid), sha256: null, createdAt, pieceCidV2 };
}

function deal(id: string, cid: string): DealRecord {
  return lifecycleDeal(id, cid, "2026-11-22T12:00:00Z");
}

async function store(metadata: Metadata, row: PieceRecord, dealId: string): Promise<void> {
  await metadata.catalog.recordUpload({
    newPiece: row,
    deal: deal(dealId, row.cid),
    usage: { subject: "user:u1", day: DAY, bytes: 10 },
  });
}

const cidOf = (row: PieceRecord | null) => row?.cid ?? null;

export function runPieceCidConformance(
  test: (title: string, fn: (f: MetadataFixture) => Promise<void>) => void,
): void {
  test("a PieceCIDv2 is set once, never replaced, and finds its piece by v2 and v1", async ({ metadata }) => {
    const { catalog } = metadata;
    const [a, b] = [cidsOf(1), cidsOf(2)];
    await store(metadata, piece("opaque-one", null), "d001");
    assertEquals(await catalog.piecesWithoutPieceCidV2(), ["opaque-one"]);
    assertEquals(await catalog.findPieceByPieceCid(a.v2), null);
    await catalog.setPieceCidV2("opaque-one", a.v2);
    await catalog.setPieceCidV2("opaque-one", b.v2);
    assertEquals((await catalog.getPiece("opaque-one"))?.pieceCidV2, a.v2);
    assertEquals(await catalog.piecesWithoutPieceCidV2(), []);
    assertEquals(cidOf(await catalog.findPieceByPieceCid(a.v2)), "opaque-one");
    assertEquals(cidOf(await catalog.findPieceByPieceCid(a.v1)), "opaque-one");
    assertEquals(await catalog.findPieceByPieceCid(b.v2), null);
    assertEquals(await catalog.findPieceByPieceCid(b.v1), null);
    // Pages carry it too (a scrub's, a copy's).
    assertEquals((await catalog.piecesAfter("", 10)).map((p) => p.pieceCidV2), [a.v2]);
  });

  test("a PieceCIDv2 recorded with the upload is found at once", async ({ metadata }) => {
    const { catalog } = metadata;
    const c = cidsOf(3);
    await store(metadata, piece(c.v2, c.v2), "d001");
    assertEquals({ ...await catalog.getPiece(c.v2) }, piece(c.v2, c.v2));
    assertEquals(await catalog.piecesWithoutPieceCidV2(), []);
    assertEquals(cidOf(await catalog.findPieceByPieceCid(c.v1)), c.v2);
  });

  test("of pieces sharing a PieceCID, a servable one is found first, then the oldest", async ({ metadata }) => {
    const { catalog } = metadata;
    const c = cidsOf(4);
    await store(metadata, piece("older", c.v2, "2026-11-20T00:00:00Z"), "d001");
    await store(metadata, piece("newer", c.v2), "d002");
    assertEquals(cidOf(await catalog.findPieceByPieceCid(c.v2)), "older");
    await catalog.markPieceCorrupt("older", "2026-11-21T13:00:00Z", "size");
    assertEquals(cidOf(await catalog.findPieceByPieceCid(c.v2)), "newer");
    assertEquals(cidOf(await catalog.findPieceByPieceCid(c.v1)), "newer");
  });

  test("a removed piece waits for no PieceCIDv2; brought back, it takes the new one", async ({ metadata }) => {
    const { catalog, lifecycle } = metadata;
    const [a, b] = [cidsOf(5), cidsOf(6)];
    await store(metadata, piece("going", null), "d001");
    await store(metadata, piece("kept", a.v2), "d002");
    const after = "2026-12-01T00:00:00Z";
    assertEquals((await lifecycle.beginRemovals(["going", "kept"], after, after)).length, 2);
    assertEquals(await catalog.piecesWithoutPieceCidV2(), []);
    await catalog.recordUpload({
      newPiece: null,
      revivedPiece: piece("kept", b.v2),
      deal: deal("d003", "kept"),
      usage: { subject: "user:u1", day: DAY, bytes: 10 },
    });
    assertEquals((await catalog.getPiece("kept"))?.pieceCidV2, b.v2);
    assertEquals(await catalog.findPieceByPieceCid(a.v1), null);
    assertEquals(cidOf(await catalog.findPieceByPieceCid(b.v1)), "kept");
  });
}
