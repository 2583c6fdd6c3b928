/**
 * A manifest is read once (decisions: "Holding up, second pass"): /f/ keeps a
 * parsed manifest, so HEADs and GETs of a split file, many at once included,
 * read its piece from the store once, not once per request (before: an
 * 8.6 MB manifest of 100,000 pieces cost 0.18 s a HEAD, and 48 at once took
 * the server to 2.2 GiB). Counted at the store, as the requests cause it.
 */
import { assertEquals } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { withOverrides } from "../helpers/overrides.ts";
import { pieceCid } from "../../src/client/sdk/mod.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../../src/kernel/manifest_format.ts";
import type { Manifest } from "../../src/kernel/manifest_format.ts";
import { ManifestCache } from "../../src/http/retrieval/manifest_cache.ts";

Deno.test("manifest cache: /f/ reads a manifest from the store once, for many requests at once and after", async () => {
  const opened: string[] = [];
  await using server = await startTestServer({
    wrapStore: (store) =>
      withOverrides(store, {
        open: (key, range) => {
          opened.push(key);
          return store.open(key, range);
        },
      }),
  });
  const part = new TextEncoder().encode("x".repeat(200));
  const { cid: piece } = await pieceCid(part);
  assertEquals((await server.upload(piece, part)).status, 200);
  // 2,000 entries of one piece: past the small-piece cache's 64 KiB, so read from the store.
  const manifest = serializeManifest({
    format: "storage-manifest",
    version: 1,
    name: "many.bin",
    contentType: "application/octet-stream",
    size: 2000 * 200,
    sha256: "0".repeat(64),
    pieces: Array.from({ length: 2000 }, () => ({ cid: piece, size: 200 })),
  });
  const cid = "bafkmanifestmany";
  const stored = await server.upload(cid, manifest, { contentType: MANIFEST_CONTENT_TYPE });
  assertEquals(stored.status, 200, await stored.text());
  opened.length = 0;
  const heads = await Promise.all(Array.from({ length: 8 }, async () => {
    const answer = await server.get(`/f/${cid}`, { method: "HEAD" });
    await answer.body?.cancel();
    return [answer.status, answer.headers.get("content-length")];
  }));
  assertEquals(heads, Array(8).fill([200, String(2000 * 200)]));
  for (let i = 0; i < 4; i++) {
    const ranged = await server.get(`/f/${cid}`, { headers: { range: "bytes=0-9" } });
    assertEquals([ranged.status, await ranged.text()], [206, "x".repeat(10)]);
  }
  assertEquals(opened.filter((key) => key === cid).length, 1, "the manifest's piece opened once");
});

Deno.test("manifest cache: kept manifests stay within their weight, the least recently used go first; reads wait their turn", async () => {
  const cache = new ManifestCache({ maxBytes: 1000, maxLoads: 1 });
  const manifestOfSize = (size: number): Manifest => ({
    format: "storage-manifest",
    version: 1,
    name: null,
    contentType: "application/octet-stream",
    size,
    sha256: "0".repeat(64),
    pieces: [],
  });
  let reads = 0;
  const get = (cid: string, size: number) =>
    cache.get({ cid, createdAt: "t", size }, () => {
      reads++;
      return Promise.resolve(manifestOfSize(size));
    });
  await get("a", 200); // weighs 400
  await get("b", 200);
  await get("a", 200); // a is now the most recently used
  await get("c", 200); // 1200 > 1000: b goes
  assertEquals([cache.bytes, reads], [800, 3]);
  await get("a", 200);
  assertEquals(reads, 3, "a kept");
  await get("b", 200);
  assertEquals(reads, 4, "b read again");
  await get("huge", 600); // heavier than the bound: used, not kept
  await get("huge", 600);
  assertEquals(reads, 6);
  // One read at a time: the second starts once the first is done.
  const first = Promise.withResolvers<Manifest | null>();
  let secondStarted = false;
  const one = cache.get({ cid: "x", createdAt: "t", size: 1 }, () => first.promise);
  const two = cache.get({ cid: "y", createdAt: "t", size: 1 }, () => {
    secondStarted = true;
    return Promise.resolve(null);
  });
  await Promise.resolve();
  assertEquals(secondStarted, false);
  first.resolve(null);
  await Promise.all([one, two]);
  assertEquals(secondStarted, true);
});
