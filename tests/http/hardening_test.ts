/**
 * Limits that keep one client (or a slow one) from taking more than its
 * share: a deal's term has an end, a quota refusal says what is left, and
 * uploads in flight are bounded per address and in the memory they pin.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { MIB } from "../helpers/bytes.ts";
import { tempFiles } from "../helpers/pieces.ts";
import { readResponse, uploadHead, writeAll } from "../helpers/raw_http.ts";
import { bearer, errorOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

Deno.test("deals: extensions stop at --max-term-days from now, and say so in the deal", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({ clock });
  let { token } = await signup(server);
  const upload = await server.upload("bafkmaxterm01", patternBytes(64), { headers: bearer(token) });
  const { dealId } = await upload.json();
  const extend = async () => {
    const response = await server.get(`/api/deals/${dealId}/extend`, {
      method: "POST",
      headers: bearer(token),
    });
    assertEquals(response.status, 200);
    return await response.json();
  };
  // 365 days, then +365 four times would be 1825; the fifth would reach 2190 days.
  for (let i = 0; i < 4; i++) await extend();
  const clamped = await extend();
  // 1826 days after now, the upload's time.
  assertEquals(clamped.termEndsAt, daysAfter("2026-11-21T10:00:00Z", 1826));
  assertEquals(clamped.termEndsAt, "2031-11-21T10:00:00Z");
  assertEquals(clamped.term, "1826 days");
  const again = await extend();
  assertEquals([again.termEndsAt, again.term], [clamped.termEndsAt, "1826 days"]);
  // A year on (with a new token: tokens live 90 days), there is room again.
  clock.advance(365 * 86_400_000);
  token = (await signup(server)).token;
  assertEquals((await extend()).termEndsAt, daysAfter("2027-11-21T10:00:00Z", 1826));
});

Deno.test("quota: a file larger than what is left says how much is left", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "1KiB"] });
  assertEquals((await server.upload("quotaleft0001", patternBytes(1000))).status, 200);
  const over = await server.upload("quotaleft0002", patternBytes(100));
  assertEquals(over.status, 429);
  const { error, message } = await errorOf(over);
  assertEquals(error, "rate_limited");
  assertMatch(message, /upload of 100 bytes is larger than the 24 bytes left/);
  assertEquals((await server.upload("quotaleft0003", patternBytes(24))).status, 200);
  const full = await errorOf(await server.upload("quotaleft0004", patternBytes(1)));
  assertMatch(full.message, /used up for today/);
});

function daysAfter(iso: string, days: number): string {
  return new Date(Date.parse(iso) + days * 86_400_000).toISOString().replace(".000Z", "Z");
}

/** Opens an upload and sends part of its body, leaving it in flight. */
async function holdUpload(server: TestServer, cid: string, size: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  await writeAll(conn, uploadHead(cid, size));
  await writeAll(conn, patternBytes(1024));
  return {
    async finish() {
      await writeAll(conn, patternBytes(size - 1024));
      const answer = await readResponse(conn);
      conn.close();
      return answer.status;
    },
  };
}

async function inFlight(server: TestServer): Promise<number> {
  return (await (await server.get("/healthz")).json()).uploads.inFlight;
}

Deno.test("uploads in flight: past the per-address bound a new one is 429, and leaves no trace", async () => {
  await using server = await startTestServer({ args: ["--max-uploads-per-client", "2"] });
  const held = [await holdUpload(server, "inflight00001", 64 * 1024)];
  held.push(await holdUpload(server, "inflight00002", 64 * 1024));
  await eventually(async () => await inFlight(server) === 2, "two uploads in flight");
  const refused = await server.upload("inflight00003", patternBytes(10));
  assertEquals(refused.status, 429);
  assertEquals(refused.headers.get("retry-after"), "1");
  assertMatch((await errorOf(refused)).message, /in flight from this address/);
  assertEquals(
    await server.server.services.ledger.reservedTotal(),
    2 * 64 * 1024,
    "only the held ones",
  );
  for (const upload of held) assertEquals(await upload.finish(), 200);
  assertEquals((await server.upload("inflight00003", patternBytes(10))).status, 200);
});

Deno.test("uploads in flight: past --upload-memory a new one is 503 server_busy", async () => {
  // One large upload pins about 2.75 MiB (two 1 MiB read buffers and its connection).
  await using server = await startTestServer({ args: ["--upload-memory", "3700KiB"] });
  const held = await holdUpload(server, "busyserver001", 8 * MIB);
  await eventually(async () => await inFlight(server) === 1, "one upload in flight");
  // Another client's large one does not fit in what is left.
  using other = Deno.createHttpClient({ localAddress: "127.0.0.2" });
  const uploadFromOther = (cid: string, size: number) =>
    fetch(`${server.url}/api/upload?cid=${cid}`, {
      method: "POST",
      client: other,
      headers: { "content-type": "application/octet-stream" },
      body: patternBytes(size),
    });
  const refused = await uploadFromOther("busyserver002", 2 * MIB);
  assertEquals(refused.status, 503);
  assertEquals(refused.headers.get("retry-after"), "1");
  const { error, message } = await errorOf(refused);
  assertEquals([error, message], [
    "server_busy",
    "Too many uploads in flight on this server; retry shortly",
  ]);
  // A small one fits beside it: 2 × 16 KiB buffers and the connection.
  const small = await uploadFromOther("busyserver003", 100);
  assertEquals(small.status, 200);
  await small.body?.cancel();
  // The holding client is past its share of so small a pool: even a small one of its own waits.
  const own = await server.upload("busyserver004", patternBytes(100));
  assertEquals([own.status, (await errorOf(own)).error], [503, "server_busy"]);
  assertEquals((await tempFiles(server.dataDir)).length, 1, "only the held upload's temp file");
  assertEquals(await server.server.services.ledger.reservedTotal(), 8 * MIB);
  assertEquals(await held.finish(), 200);
  assertEquals(server.server.services.admission.pinnedBytes, 0);
});

Deno.test("uploads in flight: bodies hashed by POST /api/piece-cids count against the same bounds", async () => {
  await using server = await startTestServer({ args: ["--max-uploads-per-client", "1"] });
  const { token } = await signup(server);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  try {
    await writeAll(
      conn,
      new TextEncoder().encode(
        `POST /api/piece-cids HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Length: ${MIB}\r\n\r\n`,
      ),
    );
    await writeAll(conn, patternBytes(1024));
    await eventually(
      () => server.server.services.admission.pinnedBytes > 0,
      "the held body admitted",
    );
    const refused = await server.get("/api/piece-cids", {
      method: "POST",
      headers: bearer(token),
      body: patternBytes(100),
    });
    await assertErrorAnswer(refused, 429, "rate_limited");
    await writeAll(conn, patternBytes(MIB - 1024));
    assertEquals((await readResponse(conn)).status, 200);
  } finally {
    conn.close();
  }
  assertEquals(server.server.services.admission.pinnedBytes, 0);
});

Deno.test("deals: an extension clamped mid-day adds whole days, so term and end agree", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({ clock, args: ["--max-term-days", "400"] });
  const { token } = await signup(server);
  const upload = await server.upload("bafkhalfday01", patternBytes(64), { headers: bearer(token) });
  const { dealId } = await upload.json();
  clock.advance(12 * 3_600_000); // half a day on: the limit is 400.5 days after the upload
  const response = await server.get(`/api/deals/${dealId}/extend`, {
    method: "POST",
    headers: bearer(token),
  });
  const deal = await response.json();
  assertEquals([deal.term, deal.termEndsAt], ["400 days", daysAfter("2026-11-21T10:00:00Z", 400)]);
});
