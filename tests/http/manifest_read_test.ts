/**
 * The server reads a manifest without holding its one thread (decisions:
 * "Holding up, second pass"): the largest manifest allowed lists 100,000
 * pieces, and checking each entry's cid cost about 0.2 s in one piece, so an
 * anonymous client's first GET /f/ of it, or its upload, stalled every other
 * client (the stall gauge saw 0.5 to 0.6 s). readManifestInSlices checks the
 * entries in slices that yield, and parses a cid listed again only once.
 */
import { assertEquals, assertRejects } from "../helpers/assert.ts";
import { turnsDuring } from "../helpers/wait.ts";
import {
  readManifest,
  readManifestInSlices,
  serializeManifest,
} from "../../src/kernel/manifest_format.ts";
import type { Manifest } from "../../src/kernel/manifest_format.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/cid_codec.ts";
import { treeShape } from "../../src/kernel/piece_cid/hasher.ts";

const PIECE_SIZE = 200;
const { height, padding } = treeShape(PIECE_SIZE);

/** A PieceCIDv2 of a 200-byte payload, different for each n (the root is made up). */
function cidNumbered(n: number): string {
  const root = new Uint8Array(32);
  new DataView(root.buffer).setUint32(0, n);
  return pieceCidV2(root, height, padding);
}

function manifestOf(pieces: { cid: string; size: number }[]): Uint8Array {
  return serializeManifest({
    format: "storage-manifest",
    version: 1,
    name: "largest.bin",
    contentType: "application/octet-stream",
    size: pieces.reduce((sum, piece) => sum + piece.size, 0),
    sha256: "0".repeat(64),
    pieces,
  });
}

Deno.test("manifest read: 100,000 different pieces are checked in slices, the event loop getting turns between them", async () => {
  const pieces = Array.from(
    { length: 100_000 },
    (_, n) => ({ cid: cidNumbered(n), size: PIECE_SIZE }),
  );
  const bytes = manifestOf(pieces);
  let manifest: Manifest | null = null;
  const turns = await turnsDuring(async () => manifest = await readManifestInSlices(bytes));
  assertEquals(manifest!.pieces.length, 100_000);
  assertEquals(manifest!.pieces, readManifest(bytes).pieces);
  // Read in one synchronous piece, no timer could have fired before the read ended.
  assertEquals(turns > 0, true, `the event loop had ${turns} turns during the read`);
});

Deno.test("manifest read: a cid listed again is held to the size its cid fixes, at every entry", async () => {
  const cid = cidNumbered(1);
  const bytes = manifestOf([{ cid, size: PIECE_SIZE }, { cid, size: PIECE_SIZE + 1 }]);
  const why = /piece 1 is listed as 201 bytes but its cid fixes 200/;
  await assertRejects(() => Promise.resolve().then(() => readManifest(bytes)), why);
  await assertRejects(() => readManifestInSlices(bytes), why);
  const twice = manifestOf([{ cid, size: PIECE_SIZE }, { cid, size: PIECE_SIZE }]);
  assertEquals((await readManifestInSlices(twice)).size, 2 * PIECE_SIZE);
});
