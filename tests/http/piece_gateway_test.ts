/**
 * GET and HEAD /piece/{pieceCid}, checked against the IPFS piece gateway
 * specification (ipfs/specs/src/http-gateways/piece-gateway.md) as it words
 * each header, on the disk store and on S3; and which cids find a piece:
 * PieceCIDv2 and PieceCIDv1, whatever form the piece was stored under
 * (tests/http/piece_cid_v2_test.ts: pieces stored under other cids).
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { errorOf } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { storeTests } from "../helpers/stores.ts";
import { pieceCid } from "../../src/client/sdk/mod.ts";

/** Over the small-piece cache's limit, and a small one served from memory. */
const SIZES = [150 * 1024 + 7, 3000];

async function storedUnder(server: TestServer, bytes: Uint8Array<ArrayBuffer>, form: "v1" | "v2") {
  const cids = await pieceCid(bytes, { pool: null });
  const cid = form === "v2" ? cids.cid : cids.cidV1;
  const response = await server.upload(cid, bytes, {
    contentType: "text/html",
    filename: "x.html",
  });
  assertEquals(response.status, 200, await response.text());
  return cids;
}

storeTests("piece gateway: the spec's headers, for GET and HEAD", async (server) => {
  for (const [seed, size] of SIZES.entries()) {
    const bytes = seededBytes(size, seed + 1);
    const { cid } = await storedUnder(server, bytes, "v2");
    for (const method of ["GET", "HEAD"]) {
      const response = await server.get(`/piece/${cid}`, { method });
      const body = new Uint8Array(await response.arrayBuffer());
      assertEquals(response.status, 200);
      assertEquals(body, method === "GET" ? bytes : new Uint8Array(0));
      const h = response.headers;
      // "Etag … The unique value must be wrapped by double quotes."
      assertMatch(h.get("etag")!, /^"[^"]+"$/);
      // "Cache-Control: public, max-age=29030400, immutable should be returned for every
      // immutable resource under /piece/ namespace."
      assertEquals(h.get("cache-control"), "public, max-age=29030400, immutable");
      // "If the implementation does not know if a given piece is a valid CAR, it may return
      // Content-Type: application/octet-stream" (whatever type it was uploaded with).
      assertEquals(h.get("content-type"), "application/octet-stream");
      // "Content-Disposition: attachment; filename="<cid>" should be returned with if
      // Content-Type: application/octet-stream responses"
      assertEquals(h.get("content-disposition"), `attachment; filename="${cid}"`);
      // "Content-Length … Represents the length of returned HTTP payload."
      assertEquals(h.get("content-length"), String(size));
      // "X-Content-Type-Options: nosniff"
      assertEquals(h.get("x-content-type-options"), "nosniff");
      // "Accept-Ranges … Optional, returned to explicitly indicate if gateway supports partial
      // HTTP Range requests"
      assertEquals(h.get("accept-ranges"), "bytes");
      assertEquals(h.get("content-range"), null, "Content-Range: only for a Range request");
    }
  }
});

storeTests("piece gateway: ranges, which the spec says MUST be supported", async (server) => {
  const bytes = seededBytes(SIZES[0], 9);
  const { cid } = await storedUnder(server, bytes, "v2");
  const first = 70_000;
  const last = 140_000;
  const response = await server.get(`/piece/${cid}`, {
    headers: { range: `bytes=${first}-${last}` },
  });
  // "206 Partial Content … Returned when requested range of data described by Range header"
  assertEquals(response.status, 206);
  // "Content-Range … Returned only when request was a Range request."
  assertEquals(response.headers.get("content-range"), `bytes ${first}-${last}/${bytes.length}`);
  assertEquals(new Uint8Array(await response.arrayBuffer()), bytes.subarray(first, last + 1));
  const suffix = await server.get(`/piece/${cid}`, {
    method: "HEAD",
    headers: { range: "bytes=-100" },
  });
  assertEquals([suffix.status, suffix.headers.get("content-length")], [206, "100"]);
  const past = await server.get(`/piece/${cid}`, { headers: { range: `bytes=${bytes.length}-` } });
  assertEquals([past.status, (await errorOf(past)).error], [416, "range_not_satisfiable"]);
  const etag = (await server.get(`/piece/${cid}`, { method: "HEAD" })).headers.get("etag")!;
  const cached = await server.get(`/piece/${cid}`, { headers: { "if-none-match": etag } });
  assertEquals(cached.status, 304);
  await cached.body?.cancel();
});

storeTests(
  "piece gateway: found by PieceCIDv2 and by PieceCIDv1, whichever it was stored under",
  async (server) => {
    const underV2 = await storedUnder(server, seededBytes(4000, 21), "v2");
    const underV1 = await storedUnder(server, seededBytes(5000, 22), "v1");
    const ok = async (cid: string, size: number) => {
      const response = await server.get(`/piece/${cid}`);
      assertEquals([response.status, (await response.arrayBuffer()).byteLength], [200, size], cid);
      assertEquals(response.headers.get("content-disposition"), `attachment; filename="${cid}"`);
      assertEquals(response.headers.get("etag"), `"${cid}"`);
    };
    await ok(underV2.cid, 4000);
    await ok(underV1.cidV1, 5000);
    // A v2 carries the size: the piece stored under the v1 of its root, with that size, is it.
    await ok(underV1.cid, 5000);
    // A piece stored under its v2 records its v1 beside it.
    await ok(underV2.cidV1, 4000);
    // The PieceCIDv2 of other bytes; and cids that are no PieceCIDs.
    const other = (await pieceCid(seededBytes(10, 23), { pool: null })).cid;
    const missing = await server.get(`/piece/${other}`);
    assertEquals([missing.status, (await errorOf(missing)).error], [404, "not_found"]);
    for (
      const notPiece of [
        "bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "opaquename0001",
        "x",
      ]
    ) {
      const refused = await server.get(`/piece/${notPiece}`);
      assertEquals(
        [refused.status, (await errorOf(refused)).error],
        [400, "invalid_cid"],
        notPiece,
      );
    }
  },
);
