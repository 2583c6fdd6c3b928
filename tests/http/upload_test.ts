/** Sponsored uploads: the result object, caps, reservations, dedupe, conflicts, restarts. */
import { assertEquals, assertMatch, assertNotEquals } from "../helpers/assert.ts";
import { errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import { FakeClock } from "../helpers/clock.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { KIB, MIB, sha256Hex } from "../helpers/bytes.ts";
import { eventually } from "../helpers/wait.ts";
import { storedPieces, tempFiles, tempFileSizes } from "../helpers/pieces.ts";
import { withTempDir } from "../helpers/files.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

Deno.test("upload: a sponsored upload returns every field of the upload result", async () => {
  await using server = await startTestServer();
  const response = await server.upload("BafkMixedCase01", "hello world", {
    contentType: "text/plain",
  });
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-type"), "application/json");
  const result = await response.json();
  assertEquals(Object.keys(result).sort(), [
    "cid",
    "dealId",
    "owner",
    "retrievalUrl",
    "roots",
    "size",
    "sponsored",
    "term",
  ]);
  assertEquals(result.cid, "BafkMixedCase01", "the cid is echoed as given");
  assertEquals(result.roots, null, "roots only for a CAR");
  assertMatch(result.dealId, /^stage-[0-9a-z]{26}$/);
  assertEquals(result.size, 11);
  assertEquals(result.retrievalUrl, `${server.url}/p/BafkMixedCase01`);
  assertEquals(result.term, "30 days");
  assertEquals(result.sponsored, true);
  assertEquals(result.owner, null);
  // The caller learns its cap and what is left (IETF RateLimit fields).
  assertEquals(
    response.headers.get("ratelimit-policy"),
    `"daily";q=${200 * MIB};w=86400;qu="content-bytes"`,
  );
  assertMatch(
    response.headers.get("ratelimit")!,
    new RegExp(`^"daily";r=${200 * MIB - 11};t=\\d+$`),
  );
});

Deno.test("upload: retrievalUrl uses the configured base URL and term the configured days", async () => {
  await using server = await startTestServer({
    args: ["--base-url", "https://stage.example.org/", "--sponsored-term-days", "7"],
  });
  const result = await (await server.upload("bafkbaseurl01", "x")).json();
  assertEquals(result.retrievalUrl, "https://stage.example.org/p/bafkbaseurl01");
  assertEquals(result.term, "7 days");
});

Deno.test("upload: a file of exactly the per-file cap is accepted, one byte more is 413", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "4KiB"] });
  assertEquals((await server.upload("bafkexactcap01", new Uint8Array(4 * KIB))).status, 200);
  const over = await server.upload("bafkexactcap02", new Uint8Array(4 * KIB + 1));
  await assertErrorAnswer(over, 413, "too_large");
});

Deno.test("upload: the daily cap answers 429 with Retry-After until UTC midnight, then resets", async () => {
  const clock = new FakeClock("2026-11-21T23:00:00Z");
  await using server = await startTestServer({
    clock,
    args: ["--sponsored-daily-cap", "2KiB"],
  });
  assertEquals((await server.upload("bafkdaycap0001", new Uint8Array(2 * KIB))).status, 200);
  const refused = await server.upload("bafkdaycap0002", new Uint8Array(1));
  assertEquals(refused.status, 429);
  assertEquals(refused.headers.get("retry-after"), "3600");
  assertEquals((await errorOf(refused)).error, "rate_limited");
  clock.set("2026-11-22T00:00:00Z");
  assertEquals((await server.upload("bafkdaycap0002", new Uint8Array(1))).status, 200);
});

Deno.test("upload: overlapping uploads reserve their bytes and cannot jointly pass the cap", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "2KiB"] });
  const port = Number(new URL(server.url).port);
  // Three 1 KiB uploads whose bodies are held open: none has been counted yet,
  // so only reservations can stop the third.
  const conns = await Promise.all(
    [1, 2, 3].map(() => Deno.connect({ hostname: "127.0.0.1", port })),
  );
  const encoder = new TextEncoder();
  const ledger = server.server.services.ledger;
  for (const [i, conn] of conns.entries()) {
    await conn.write(encoder.encode(
      `POST /api/upload?cid=bafkoverlap0${i} HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\n` +
        `Content-Length: 1024\r\nConnection: close\r\n\r\n` + "x".repeat(512),
    ));
    // Each upload is in its handler, holding its reservation, before the next one starts.
    if (i < 2) {
      await eventually(
        async () => await ledger.reservedTotal() === (i + 1) * KIB,
        `upload ${i} reserved 1 KiB`,
      );
    }
  }
  await eventually(
    () => server.logs.some((l) => l.route === "/api/upload" && l.status === 429),
    "the third upload refused while the first two are in flight",
  );
  assertEquals(await ledger.reservedTotal(), 2 * KIB, "the refused upload reserved nothing");
  for (const conn of conns) await conn.write(encoder.encode("y".repeat(512)));
  const statuses = await Promise.all(conns.map(async (conn) => {
    const text = await new Response(conn.readable).text();
    return Number(text.split(" ")[1]);
  }));
  assertEquals(statuses.sort(), [200, 200, 429]);
});

Deno.test("upload: many parallel uploads never exceed the daily cap by a byte", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "10KiB"] });
  const responses = await Promise.all(
    Array.from({ length: 25 }, (_, i) => server.upload(`bafkparallel${i}x`, patternBytes(KIB, i))),
  );
  const statuses = responses.map((r) => r.status);
  await Promise.all(responses.map((r) => r.body?.cancel()));
  assertEquals(statuses.filter((s) => s === 200).length, 10);
  assertEquals(statuses.filter((s) => s === 429).length, 15);
  assertEquals((await storedPieces(server.dataDir)).length, 10);
});

Deno.test("upload: identical bytes under a stored cid make a new deal and no second copy", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "25B"] });
  const first = await (await server.upload("bafkdedupe0001", "0123456789")).json();
  const second = await (await server.upload("BAFKDEDUPE0001", "0123456789")).json();
  assertNotEquals(first.dealId, second.dealId);
  assertEquals(second.cid, "BAFKDEDUPE0001");
  assertEquals((await storedPieces(server.dataDir)).length, 1);
  // Both uploads counted toward the cap: 20 of 25 bytes used, so 10 more do not fit.
  const third = await server.upload("bafkdedupe0002", "0123456789");
  assertEquals(third.status, 429);
  await third.body?.cancel();
});

Deno.test("upload: different bytes under a stored cid are 409 cid_conflict and change nothing", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "20B"] });
  assertEquals((await server.upload("bafkconflict01", "original!!")).status, 200);
  const conflict = await server.upload("bafkconflict01", "imposter!!");
  await assertErrorAnswer(conflict, 409, "cid_conflict");
  assertEquals(await (await server.get("/p/bafkconflict01")).text(), "original!!");
  // The refused upload was not charged: 10 more bytes still fit under 20.
  assertEquals((await server.upload("bafkconflict02", "0123456789")).status, 200);
  assertEquals(await tempFiles(server.dataDir), []);
});

Deno.test("upload: racing different bytes under one cid gives exactly one winner", async () => {
  await using server = await startTestServer();
  const responses = await Promise.all(
    Array.from({ length: 8 }, (_, i) => server.upload("bafkrace000001", patternBytes(64 * KIB, i))),
  );
  const statuses = responses.map((r) => r.status);
  await Promise.all(responses.map((r) => r.body?.cancel()));
  assertEquals(statuses.filter((s) => s === 200).length, 1);
  assertEquals(statuses.filter((s) => s === 409).length, 7);
  const winner = statuses.indexOf(200);
  const served = new Uint8Array(await (await server.get("/p/bafkrace000001")).arrayBuffer());
  assertEquals(await sha256Hex(served), await sha256Hex(patternBytes(64 * KIB, winner)));
});

Deno.test("upload: an upload aborted mid-body stores nothing and charges nothing", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "1000B"] });
  const port = Number(new URL(server.url).port);
  await rawRequest(
    port,
    "POST /api/upload?cid=bafkaborted001 HTTP/1.1\nHost: x\nContent-Type: a/b\nContent-Length: 1000\n",
    {
      body: "x".repeat(500),
      // Hang up once the server has staged the half body it got.
      abortWhen: () =>
        eventually(
          async () => (await tempFileSizes(server.dataDir)).includes(500),
          "the first 500 bytes in a temp file",
        ),
    },
  );
  await eventually(
    async () => await server.server.services.ledger.reservedTotal() === 0,
    "reservation released",
  );
  await eventually(async () => (await tempFiles(server.dataDir)).length === 0, "temp file removed");
  assertEquals(await storedPieces(server.dataDir), []);
  assertEquals((await server.get("/p/bafkaborted001")).status, 404);
  // The whole daily cap is still free.
  assertEquals((await server.upload("bafkaborted001", new Uint8Array(1000))).status, 200);
});

Deno.test("upload: a restart keeps pieces, metadata and daily counters", async () => {
  await withTempDir("storage-restart-", async (dataDir) => {
    const args = ["--sponsored-daily-cap", "3KiB"];
    {
      await using server = await startTestServer({ dataDir, args });
      const response = await server.upload("bafkrestart001", patternBytes(2 * KIB), {
        contentType: "image/png",
        filename: "pic.png",
      });
      assertEquals(response.status, 200);
      await response.body?.cancel();
    }
    await using again = await startTestServer({ dataDir, args });
    const served = await again.get("/p/bafkrestart001");
    assertEquals(served.status, 200);
    assertEquals(served.headers.get("content-type"), "image/png");
    assertMatch(served.headers.get("content-disposition")!, /filename="pic.png"/);
    assertEquals(new Uint8Array(await served.arrayBuffer()), patternBytes(2 * KIB));
    // 2 KiB of the 3 KiB cap were used before the restart.
    const refused = await again.upload("bafkrestart002", patternBytes(2 * KIB));
    assertEquals(refused.status, 429);
    await refused.body?.cancel();
  });
});

Deno.test("upload: temp files left by a crash are removed right after start-up", async () => {
  await withTempDir("storage-leftover-", async (dataDir) => {
    await Deno.mkdir(`${dataDir}/pieces/tmp`, { recursive: true });
    await Deno.writeTextFile(`${dataDir}/pieces/tmp/dead-upload.part`, "half an upload");
    await using server = await startTestServer({ dataDir });
    // The sweep runs in the background, so that a store out of reach does not stop the start.
    await eventually(
      () => server.logs.some((l) => l.msg === "removed leftovers of interrupted uploads"),
      "the start-up sweep",
    );
    assertEquals(await tempFiles(dataDir), []);
  });
});

for (const size of [1, MIB, 100 * MIB]) {
  Deno.test(`upload: ${size} bytes come back byte-identical`, async () => {
    await using server = await startTestServer();
    const bytes = patternBytes(size, 3);
    const cid = `bafkidentity${size}`;
    const response = await server.upload(cid, bytes);
    assertEquals(response.status, 200);
    assertEquals((await response.json()).size, size);
    const served = await server.get(`/p/${cid}`);
    assertEquals(served.headers.get("content-length"), String(size));
    assertEquals(
      await sha256Hex(new Uint8Array(await served.arrayBuffer())),
      await sha256Hex(bytes),
    );
  });
}

Deno.test("upload: X-Forwarded-For cannot move a client to a fresh cap without trusted proxies", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "1KiB"] });
  assertEquals((await server.upload("bafkspoofxff01", new Uint8Array(KIB))).status, 200);
  const spoofed = await server.upload("bafkspoofxff02", new Uint8Array(1), {
    headers: { "x-forwarded-for": "203.0.113.77" },
  });
  assertEquals(spoofed.status, 429);
  await spoofed.body?.cancel();
});

Deno.test("upload: behind a trusted proxy each forwarded client has its own cap", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-daily-cap", "1KiB", "--trusted-proxies", "127.0.0.1"],
  });
  const as = (client: string, cid: string) =>
    server.upload(cid, new Uint8Array(KIB), { headers: { "x-forwarded-for": client } });
  assertEquals((await as("203.0.113.1", "bafkproxied001")).status, 200);
  assertEquals((await as("203.0.113.2", "bafkproxied002")).status, 200);
  const again = await as("203.0.113.1", "bafkproxied003");
  assertEquals(again.status, 429);
  await again.body?.cancel();
  // IPv6 clients of one /64 share a bucket.
  assertEquals((await as("2001:db8:1:2::1", "bafkproxied004")).status, 200);
  const sameNet = await as("2001:db8:1:2::ffff", "bafkproxied005");
  assertEquals(sameNet.status, 429);
  await sameNet.body?.cancel();
});
