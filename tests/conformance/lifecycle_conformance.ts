/**
 * The lifecycle's records, a part of the metadata conformance suite every
 * backend passes (metadata_sqlite_test.ts, metadata_postgres_test.ts call
 * it): deal deletion and the state filter, the rule of what a sweep may
 * remove (deals, deletions, the grace cut-off, manifests), the three steps
 * of a removal and their marks, a piece brought back by an upload, manifest
 * listings, and the last sweep.
 */
import { assertEquals } from "../helpers/assert.ts";
import type { MetadataFixture } from "./metadata_conformance.ts";
import type { DealRecord, PieceRecord } from "../../src/domain/catalog_records.ts";
import type { Metadata } from "../../src/backends/metadata.ts";

const DAY = "2026-11-21";
const CREATED = "2026-11-21T12:00:00Z";
const MANIFEST_TYPE = "application/vnd.storage-manifest+json";

/** A stored piece's record (the PieceCID suite builds on it too). */
export function piece(cid: string, size = 10): PieceRecord {
  return {
    cid,
    size,
    sha256: "a".repeat(64),
    contentType: "application/octet-stream",
    filename: null,
    createdAt: CREATED,
    corruptAt: null,
    removedAt: null,
    pieceCidV2: null,
  };
}

/** A deal on cid ending at termEndsAt (the PieceCID suite builds on it too). */
export function deal(
  id: string,
  cid: string,
  termEndsAt: string,
  extra: Partial<DealRecord> = {},
) {
  return {
    id,
    cid,
    tier: "token",
    ownerSub: "u1",
    ownerName: "a@b.org",
    size: 10,
    contentType: "application/octet-stream",
    filename: null,
    termDays: 30,
    createdAt: CREATED,
    termEndsAt,
    deletedAt: null,
    ...extra,
  } satisfies DealRecord;
}

/** Records a piece (new unless stored already) and one deal on it. */
async function upload(
  metadata: Metadata,
  cid: string,
  dealRecord: DealRecord,
  options: { listing?: string[]; size?: number } = {},
) {
  const stored = await metadata.catalog.getPiece(cid);
  await metadata.catalog.recordUpload({
    newPiece: stored === null ? piece(cid, options.size) : null,
    deal: dealRecord,
    manifestListing: options.listing ?? null,
    usage: { subject: "user:u1", day: DAY, bytes: 10 },
  });
}

async function removable(metadata: Metadata, endedBy: string): Promise<string[]> {
  const page = await metadata.lifecycle.sweepPage("", endedBy, 100);
  return page.filter((row) => row.removable).map((row) => row.cid);
}

export function runLifecycleConformance(
  test: (title: string, fn: (f: MetadataFixture) => Promise<void>) => void,
): void {
  test("a deleted deal keeps its first deletion time; deals filter by state at an instant", async ({ metadata }) => {
    const { catalog } = metadata;
    await upload(metadata, "bafkone", deal("d1", "bafkone", "2026-12-01T00:00:00Z"));
    await upload(metadata, "bafkone", deal("d2", "bafkone", "2026-12-21T00:00:00Z"));
    await upload(metadata, "bafkone", deal("d3", "bafkone", "2026-12-21T00:00:00Z"));
    await catalog.deleteDeal("d3", "2026-11-25T00:00:00Z");
    await catalog.deleteDeal("d3", "2026-11-26T00:00:00Z");
    assertEquals((await catalog.getDeal("d3"))?.deletedAt, "2026-11-25T00:00:00Z");
    const ids = async (state: "active" | "expired" | "deleted", now: string) =>
      (await catalog.listDeals("u1", { beforeId: null, limit: 10, filter: { state, now } }))
        .map((d) => d.id);
    assertEquals(await ids("active", "2026-11-30T00:00:00Z"), ["d2", "d1"]);
    assertEquals(await ids("active", "2026-12-01T00:00:00Z"), ["d2"], "ends at termEndsAt");
    assertEquals(await ids("expired", "2026-12-01T00:00:00Z"), ["d1"]);
    assertEquals(await ids("deleted", "2026-12-01T00:00:00Z"), ["d3"]);
    const page = await catalog.listDeals("u1", {
      beforeId: "d2",
      limit: 10,
      filter: { state: "expired", now: "2027-01-01T00:00:00Z" },
    });
    assertEquals(page.map((d) => d.id), ["d1"], "the cursor and the filter together");
  });

  test("a piece may go once every deal on it ended by the cut-off, deletions included", async ({ metadata }) => {
    await upload(metadata, "bafkexpired", deal("d1", "bafkexpired", "2026-12-01T00:00:00Z"));
    await upload(metadata, "bafkshared", deal("d2", "bafkshared", "2026-12-01T00:00:00Z"));
    await upload(metadata, "bafkshared", deal("d3", "bafkshared", "2027-01-01T00:00:00Z"));
    await upload(
      metadata,
      "bafkdeleted",
      deal("d4", "bafkdeleted", "2027-01-01T00:00:00Z", { deletedAt: "2026-11-22T00:00:00Z" }),
    );
    assertEquals(await removable(metadata, "2026-11-30T00:00:00Z"), ["bafkdeleted"]);
    assertEquals(await removable(metadata, "2026-12-01T00:00:00Z"), [
      "bafkdeleted",
      "bafkexpired",
    ]);
    assertEquals(await removable(metadata, "2027-01-01T00:00:00Z"), [
      "bafkdeleted",
      "bafkexpired",
      "bafkshared",
    ]);
    assertEquals(await metadata.lifecycle.removalBacklog("2026-12-01T00:00:00Z"), {
      pieces: 2,
      bytes: 20,
    });
  });

  test("a live deal on a manifest keeps the pieces it lists", async ({ metadata }) => {
    const { lifecycle } = metadata;
    const ended = "2026-12-01T00:00:00Z";
    await upload(metadata, "bafkpart1", deal("d1", "bafkpart1", ended));
    await upload(metadata, "bafkpart2", deal("d2", "bafkpart2", ended));
    await upload(metadata, "bafkother", deal("d3", "bafkother", ended));
    await upload(
      metadata,
      "bafkmanifest",
      deal("d4", "bafkmanifest", "2027-01-01T00:00:00Z", { contentType: MANIFEST_TYPE }),
      { listing: ["bafkpart1", "bafkpart2"] },
    );
    assertEquals(await removable(metadata, "2026-12-15T00:00:00Z"), ["bafkother"]);
    assertEquals(await lifecycle.unlistedManifests(10), [], "listed at upload");
    await metadata.catalog.deleteDeal("d4", "2026-12-10T00:00:00Z");
    assertEquals(await removable(metadata, "2026-12-15T00:00:00Z"), [
      "bafkmanifest",
      "bafkother",
      "bafkpart1",
      "bafkpart2",
    ]);
  });

  test("a manifest uploaded without its listing is found, and listed once read", async ({ metadata }) => {
    const { lifecycle } = metadata;
    await upload(metadata, "bafkpart1", deal("d1", "bafkpart1", "2026-12-01T00:00:00Z"));
    await upload(
      metadata,
      "bafkoldmanifest",
      deal("d2", "bafkoldmanifest", "2027-01-01T00:00:00Z", { contentType: MANIFEST_TYPE }),
    );
    assertEquals(await lifecycle.unlistedManifests(10), ["bafkoldmanifest"]);
    assertEquals(await removable(metadata, "2026-12-15T00:00:00Z"), ["bafkpart1"]);
    await lifecycle.recordManifestListing("bafkoldmanifest", ["bafkpart1"]);
    await lifecycle.recordManifestListing("bafkoldmanifest", ["bafkpart1"]);
    assertEquals(await lifecycle.unlistedManifests(10), []);
    assertEquals(await removable(metadata, "2026-12-15T00:00:00Z"), []);
  });

  test("a removal is marked, re-checked, finished, and polled by mark", async ({ metadata }) => {
    const { catalog, lifecycle } = metadata;
    await upload(metadata, "bafkgoing", deal("d1", "bafkgoing", "2026-12-01T00:00:00Z"), {
      size: 7,
    });
    await upload(metadata, "bafkstays", deal("d2", "bafkstays", "2027-12-01T00:00:00Z"));
    const cutoff = "2026-12-15T00:00:00Z";
    assertEquals(await lifecycle.lastRemovalMark(), 0);
    // Wanted, no row, or the one that goes: only it is marked.
    const begun = await lifecycle.beginRemovals(
      ["bafkstays", "bafknone", "bafkgoing"],
      cutoff,
      "2026-12-16T00:00:00Z",
    );
    assertEquals(begun.map((b) => b.cid), ["bafkgoing"]);
    const mark = begun[0].mark;
    assertEquals(await lifecycle.beginRemovals(["bafkgoing"], cutoff, CREATED), [], "marked");
    assertEquals((await catalog.getPiece("bafkgoing"))?.removedAt, "2026-12-16T00:00:00Z");
    assertEquals(await catalog.storedTotals(), { pieces: 1, bytes: 10 });
    assertEquals(await lifecycle.storedAmong(["bafkgoing", "bafkstays", "bafknone"]), [
      "bafkstays",
    ]);
    assertEquals(await removable(metadata, cutoff), [], "a removed piece is not judged again");
    assertEquals(await lifecycle.unfinishedRemovals(), [{ mark, cid: "bafkgoing" }]);
    assertEquals(await lifecycle.isRemovalPending(mark), true);
    await lifecycle.finishRemovals([mark], "2026-12-16T00:00:01Z");
    assertEquals(await lifecycle.isRemovalPending(mark), false);
    assertEquals(await lifecycle.unfinishedRemovals(), []);
    assertEquals(await lifecycle.removalMarksAfter(0), [{ mark, cid: "bafkgoing" }]);
    assertEquals(await lifecycle.removalMarksAfter(mark), []);
    assertEquals(await lifecycle.lastRemovalMark(), mark);
  });

  test("an upload of a removed piece brings it back: the removal, corrupt mark and listing go", async ({ metadata }) => {
    const { catalog, lifecycle } = metadata;
    await upload(
      metadata,
      "bafkback",
      deal("d1", "bafkback", "2026-12-01T00:00:00Z", { contentType: MANIFEST_TYPE }),
      { listing: ["bafkpart"] },
    );
    await catalog.markPieceCorrupt("bafkback", "2026-11-30T00:00:00Z", "test");
    const [{ mark: first }] = await lifecycle.beginRemovals(
      ["bafkback"],
      "2026-12-15T00:00:00Z",
      CREATED,
    );
    await catalog.recordUpload({
      newPiece: null,
      revivedPiece: { ...piece("bafkback", 12), createdAt: "2027-01-01T00:00:00Z" },
      deal: deal("d2", "bafkback", "2027-02-01T00:00:00Z"),
      usage: { subject: "user:u1", day: DAY, bytes: 12 },
    });
    const back = await catalog.getPiece("bafkback");
    assertEquals([back?.removedAt, back?.corruptAt, back?.size], [null, null, 12]);
    assertEquals(back?.createdAt, "2027-01-01T00:00:00Z");
    assertEquals(await lifecycle.isRemovalPending(first), false, "its mark is gone");
    // Its bytes are new: d1 typed them a manifest, so the next sweep reads them again.
    assertEquals(await lifecycle.unlistedManifests(10), ["bafkback"]);
    // Removed again later: a new mark, larger than the first.
    const [{ mark: again }] = await lifecycle.beginRemovals(
      ["bafkback"],
      "2027-03-01T00:00:00Z",
      CREATED,
    );
    assertEquals(again > first, true);
  });

  test("the last sweep is kept, one row replaced by the next", async ({ metadata }) => {
    const { lifecycle } = metadata;
    assertEquals(await lifecycle.lastSweep(), null);
    const sweep = {
      startedAt: "2026-12-01T00:00:00Z",
      finishedAt: "2026-12-01T00:01:00Z",
      removedPieces: 3,
      removedBytes: 3000,
      removedOrphans: 1,
    };
    await lifecycle.recordSweep(sweep);
    assertEquals(await lifecycle.lastSweep(), sweep);
    const next = { ...sweep, finishedAt: "2026-12-02T00:00:00Z", removedPieces: 0 };
    await lifecycle.recordSweep(next);
    assertEquals(await lifecycle.lastSweep(), next);
  });
}
