/**
 * Byte ranges on GET and HEAD /p/{cid} (RFC 9110 §14), on the disk store and
 * on S3: every form of one range, the ranges that are ignored (several, a
 * failed If-Range, malformed, another unit) and the one refused (416), the
 * small-piece cache answering ranges from memory, and what the metrics and
 * the log line say about a 206.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { storeTests } from "../helpers/stores.ts";
import type { StoreServer } from "../helpers/stores.ts";
import { signed } from "../helpers/s3.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";

/** Over the small-piece cache's 64 KiB, so read from the store, across its read sizes. */
const BIG = patternBytes(200 * 1024 + 13, 3);
const BIG_CID = "bafkrangesbig001";
const SMALL = new TextEncoder().encode("0123456789abcdefghij");
const SMALL_CID = "bafkrangessmall1";

async function stored(server: TestServer, cid: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await server.upload(cid, bytes, { contentType: "video/webm" });
  assertEquals(response.status, 200, await response.text());
}

async function ranged(server: TestServer, cid: string, headers: Record<string, string>) {
  const response = await server.get(`/p/${cid}`, { headers });
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

/** Checks a 206 for [first, last] of `whole`. */
async function expectPartial(
  server: TestServer,
  cid: string,
  whole: Uint8Array,
  range: string,
  [first, last]: [number, number],
) {
  const { response, bytes } = await ranged(server, cid, { range });
  assertEquals(response.status, 206, range);
  assertEquals(response.headers.get("content-range"), `bytes ${first}-${last}/${whole.length}`);
  assertEquals(response.headers.get("content-length"), String(last - first + 1));
  assertEquals(response.headers.get("accept-ranges"), "bytes");
  assertEquals(response.headers.get("etag"), `"${cid}"`);
  assertEquals(response.headers.get("content-type"), "video/webm");
  assertEquals(bytes, whole.subarray(first, last + 1), range);
}

async function expectWhole(
  server: TestServer,
  cid: string,
  whole: Uint8Array,
  headers: Record<string, string>,
) {
  const { response, bytes } = await ranged(server, cid, headers);
  assertEquals(response.status, 200, JSON.stringify(headers));
  assertEquals(response.headers.get("content-range"), null);
  assertEquals(bytes, whole);
}

storeTests("ranges: one range in every form, from the store", async (server) => {
  await stored(server, BIG_CID, BIG);
  const size = BIG.length;
  await expectPartial(server, BIG_CID, BIG, "bytes=0-0", [0, 0]);
  await expectPartial(server, BIG_CID, BIG, "bytes=65530-131080", [65530, 131080]);
  await expectPartial(server, BIG_CID, BIG, "bytes=100000-", [100000, size - 1]);
  await expectPartial(server, BIG_CID, BIG, "bytes=-10", [size - 10, size - 1]);
  // A suffix longer than the file is the whole file, still as a range; a last-pos past the
  // end is cut there.
  await expectPartial(server, BIG_CID, BIG, "bytes=-999999999", [0, size - 1]);
  await expectPartial(server, BIG_CID, BIG, `bytes=${size - 3}-${size + 1000}`, [
    size - 3,
    size - 1,
  ]);
  // The unit is case-insensitive and the list may carry spaces and empty elements.
  await expectPartial(server, BIG_CID, BIG, "Bytes= 5-9 ,", [5, 9]);
});

storeTests(
  "ranges: several, malformed, another unit or a failed If-Range get the whole file",
  async (server) => {
    await stored(server, BIG_CID, BIG);
    for (
      const headers of <Record<string, string>[]> [
        { range: "bytes=0-1,5-9" },
        { range: "bytes=9-5" },
        { range: "bytes=abc" },
        { range: "bytes=1-2-3" },
        { range: "items=0-1" },
        { range: "bytes=" },
        { range: "bytes=0-1", "if-range": '"someothercid"' },
        { range: "bytes=0-1", "if-range": `W/"${BIG_CID}"` },
        { range: "bytes=0-1", "if-range": "Tue, 01 Dec 2026 00:00:00 GMT" },
      ]
    ) {
      await expectWhole(server, BIG_CID, BIG, headers);
    }
    await expectPartial(server, BIG_CID, BIG, "bytes=0-1", [0, 1]);
    const { response } = await ranged(server, BIG_CID, {
      range: "bytes=2-3",
      "if-range": `"${BIG_CID}"`,
    });
    assertEquals(response.status, 206, "If-Range with the ETag honours the range");
  },
);

storeTests(
  "ranges: a range that starts past the end is 416 with bytes */size, as JSON",
  async (server) => {
    await stored(server, BIG_CID, BIG);
    for (
      const range of [
        `bytes=${BIG.length}-`,
        `bytes=${BIG.length + 5}-${BIG.length + 9}`,
        "bytes=-0",
      ]
    ) {
      const response = await server.get(`/p/${BIG_CID}`, { headers: { range } });
      assertEquals(response.status, 416, range);
      assertEquals(response.headers.get("content-range"), `bytes */${BIG.length}`);
      assertEquals((await errorOf(response)).error, "range_not_satisfiable");
    }
    const head = await server.get(`/p/${BIG_CID}`, {
      method: "HEAD",
      headers: { range: "bytes=-0" },
    });
    assertEquals([head.status, head.headers.get("content-range")], [416, `bytes */${BIG.length}`]);
    assertEquals(await head.text(), "");
  },
);

storeTests(
  "ranges: HEAD answers as GET without the body; If-None-Match comes first",
  async (server) => {
    await stored(server, BIG_CID, BIG);
    const head = await server.get(`/p/${BIG_CID}`, {
      method: "HEAD",
      headers: { range: "bytes=10-19" },
    });
    assertEquals(head.status, 206);
    assertEquals(head.headers.get("content-range"), `bytes 10-19/${BIG.length}`);
    assertEquals(head.headers.get("content-length"), "10");
    assertEquals(await head.text(), "");
    const conditional = await server.get(`/p/${BIG_CID}`, {
      headers: { range: "bytes=10-19", "if-none-match": `"${BIG_CID}"` },
    });
    assertEquals(conditional.status, 304);
    await conditional.body?.cancel();
    // A client that sends no Range sees what it always saw, Accept-Ranges aside.
    const plain = await server.get(`/p/${BIG_CID}`);
    assertEquals([plain.status, plain.headers.get("content-length")], [200, String(BIG.length)]);
    assertEquals(new Uint8Array(await plain.arrayBuffer()), BIG);
  },
);

storeTests("ranges: a cached small piece answers ranges from memory", async (server) => {
  await stored(server, SMALL_CID, SMALL);
  const first = await server.get(`/p/${SMALL_CID}`);
  assertEquals(await first.text(), "0123456789abcdefghij");
  await removeBehindTheServer(server, SMALL_CID);
  // The bytes are gone from the store: only memory can answer now.
  await expectPartial(server, SMALL_CID, SMALL, "bytes=3-5", [3, 5]);
  await expectPartial(server, SMALL_CID, SMALL, "bytes=-4", [16, 19]);
  const refused = await server.get(`/p/${SMALL_CID}`, { headers: { range: "bytes=20-" } });
  assertEquals([refused.status, refused.headers.get("content-range")], [416, "bytes */20"]);
  await refused.body?.cancel();
  await expectWhole(server, SMALL_CID, SMALL, { range: "bytes=0-1,3-4" });
});

storeTests(
  "ranges: an uncached small piece's range is served, and caches the piece",
  async (server) => {
    await stored(server, SMALL_CID, SMALL);
    await expectPartial(server, SMALL_CID, SMALL, "bytes=10-", [10, 19]);
    await removeBehindTheServer(server, SMALL_CID);
    await expectWhole(server, SMALL_CID, SMALL, {});
  },
);

storeTests(
  "ranges: metrics count 206 and 416 apart and the log line names the range",
  async (server) => {
    await stored(server, BIG_CID, BIG);
    await (await server.get(`/p/${BIG_CID}`, { headers: { range: "bytes=0-99" } })).body?.cancel();
    await (await server.get(`/p/${BIG_CID}`, { headers: { range: "bytes=-0" } })).body?.cancel();
    await (await server.get(`/p/${BIG_CID}`)).body?.cancel();
    const metrics = await (await server.get("/metrics")).text();
    for (const status of ["200", "206", "416"]) {
      assertOk(
        metrics.includes(`storage_requests_total{route="/p/:cid",status="${status}"} 1`),
        `a ${status} is counted`,
      );
    }
    const lines = server.logs.filter((line) => line.msg === "request" && line.route === "/p/:cid");
    const partial = lines.find((line) => line.status === 206);
    assertEquals([partial?.range, partial?.bytesOut], ["0-99", 100]);
    assertEquals(lines.find((line) => line.status === 416)?.range, "unsatisfiable");
  },
);

/** Deletes a piece's bytes from the store without the server knowing. */
async function removeBehindTheServer(server: StoreServer, cid: string): Promise<void> {
  if (server.bucket === null) {
    await Deno.remove(`${server.dataDir}/pieces/${shardOf(cid)}/${cid}`);
    return;
  }
  const response = await signed(server.bucket, `/${server.bucket.bucket}/pieces/${cid}`, {
    method: "DELETE",
  });
  assertOk(response.ok, `DELETE answered ${response.status}`);
  await response.body?.cancel();
}

Deno.test("ranges: HEAD of a range past the end says the length GET's 416 has", async () => {
  await using server = await startTestServer();
  assertEquals((await server.upload("bafkheadrange001", "hello")).status, 200);
  const init = { headers: { range: "bytes=100-" } };
  const get = await server.get("/p/bafkheadrange001", init);
  const body = new Uint8Array(await get.arrayBuffer());
  const head = await server.get("/p/bafkheadrange001", { ...init, method: "HEAD" });
  await head.body?.cancel();
  assertEquals([get.status, head.status], [416, 416]);
  assertEquals(head.headers.get("content-length"), String(body.length));
  assertEquals(head.headers.get("content-range"), "bytes */5");
});
