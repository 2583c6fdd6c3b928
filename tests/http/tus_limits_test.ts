/**
 * A tus PATCH is an upload's body like any other, and the open-network limits
 * hold for it as for POST /api/upload: it is admitted against the upload
 * memory pool and the client's share of it (by address and by token), counted
 * among the client address's uploads in flight, and cut with 408 when it comes
 * slower than --body-min-rate; unlike a plain upload, what it carried before
 * the cut is kept, and the upload goes on from there. Clients are 127.0.0.x
 * source addresses.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { holdUpload } from "../helpers/held_upload.ts";
import type { HeldUpload } from "../helpers/held_upload.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCidOf, tusCreate, tusCreated, tusHead, tusPatch } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";

const FILE = seededBytes(8 * MIB, 26);
const CID = pieceCidOf(FILE);

/** A PATCH at offset 0 held open from `from`: its head and the first KiB of the file sent. */
async function holdPatch(
  server: TestServer,
  options: { from: string; url: string; token?: string },
): Promise<HeldUpload> {
  const auth = options.token === undefined ? [] : [`Authorization: Bearer ${options.token}`];
  return await holdUpload({
    port: server.server.port,
    from: options.from,
    method: "PATCH",
    path: new URL(options.url).pathname,
    contentType: "application/offset+octet-stream",
    length: FILE.length,
    headers: ["Tus-Resumable: 1.0.0", "Upload-Offset: 0", ...auth],
    first: FILE.slice(0, 1024),
  });
}

/** Waits until a held request is admitted (memory booked) or answered. */
async function admittedOrAnswered(server: TestServer, held: HeldUpload, before: number) {
  const admission = server.server.services.admission;
  await eventually(() => held.answered || admission.pinnedBytes > before, "admitted or answered");
}

Deno.test("tus limits: PATCHes take the client's share of upload memory; past it 503, another client goes on", async () => {
  // A large body pins 2.75 MiB; a quarter of 32 MiB holds two of them.
  await using server = await startTestServer({ args: ["--upload-memory", "32MiB"] });
  const { token } = await signup(server);
  const admission = server.server.services.admission;
  const urls: string[] = [];
  for (let i = 0; i < 3; i++) {
    const cid = i === 0 ? CID : `bafktusshare0${i}`;
    urls.push(await tusCreated(server.url, { cid, length: FILE.length, headers: bearer(token) }));
  }
  const held: HeldUpload[] = [];
  try {
    for (const [i, from] of [[0, "127.0.0.2"], [1, "127.0.0.3"]] as const) {
      const before = admission.pinnedBytes;
      held.push(await holdPatch(server, { from, url: urls[i], token }));
      await admittedOrAnswered(server, held[i], before);
      assertEquals(held[i].answered, false, `PATCH ${i} was refused`);
    }
    // The token's share is full, from whichever address it comes.
    const refused = await holdPatch(server, { from: "127.0.0.4", url: urls[2], token });
    const answer = await refused.response;
    refused.close();
    assertEquals(answer?.status, 503, answer?.body);
    assertEquals(JSON.parse(answer!.body).error, "server_busy");
    assertEquals(answer!.headers.get("tus-resumable"), "1.0.0");
    assertEquals(answer!.headers.get("retry-after"), "1");
    assertEquals(
      (await tusHead(urls[2], bearer(token))).offset,
      0,
      "the refused PATCH kept nothing",
    );
    // Another client (a sponsored caller at another address) is not held back.
    const small = seededBytes(100_000, 3);
    const other = await tusCreated(server.url, { cid: pieceCidOf(small), length: small.length });
    assertEquals((await tusPatch(other, 0, small)).status, 204);
  } finally {
    for (const upload of held) upload.close();
  }
  await eventually(() => admission.pinnedBytes === 0, "the cut PATCHes give their memory back");
  // What the cut PATCHes carried is kept, and the first upload finishes from there.
  const offset = (await tusHead(urls[0], bearer(token))).offset!;
  assertOk(offset > 0 && offset <= 1024, `offset ${offset}`);
  const rest = await tusPatch(urls[0], offset, FILE.slice(offset), bearer(token));
  assertEquals([rest.status, rest.headers.get("x-storage-cid")], [204, CID]);
});

Deno.test("tus limits: a PATCH counts among the address's uploads in flight (--max-uploads-per-client)", async () => {
  await using server = await startTestServer({ args: ["--max-uploads-per-client", "2"] });
  const { token } = await signup(server);
  const url = await tusCreated(server.url, {
    cid: CID,
    length: FILE.length,
    headers: bearer(token),
  });
  const held: HeldUpload[] = [];
  try {
    for (const cid of ["bafkinflight01", "bafkinflight02"]) {
      const before = server.server.services.admission.pinnedBytes;
      held.push(
        await holdUpload({
          port: server.server.port,
          from: "127.0.0.2",
          path: `/api/upload?cid=${cid}`,
          length: MIB,
        }),
      );
      await admittedOrAnswered(server, held.at(-1)!, before);
    }
    const refused = await holdPatch(server, { from: "127.0.0.2", url, token });
    const answer = await refused.response;
    refused.close();
    assertEquals(answer?.status, 429, answer?.body);
    assertEquals(JSON.parse(answer!.body).error, "rate_limited");
    assertEquals(answer!.headers.get("tus-resumable"), "1.0.0");
    // From another address the same upload goes on.
    assertEquals((await tusPatch(url, 0, FILE.slice(0, MIB), bearer(token))).status, 204);
  } finally {
    for (const upload of held) upload.close();
  }
});

Deno.test("tus limits: a PATCH slower than --body-min-rate is cut with 408; what arrived is kept and the upload goes on", async () => {
  await using server = await startTestServer({
    args: ["--body-min-rate", "64KiB", "--body-rate-grace", "1"],
  });
  const { token } = await signup(server);
  const url = await tusCreated(server.url, {
    cid: CID,
    length: FILE.length,
    headers: bearer(token),
  });
  const slow = await holdPatch(server, { from: "127.0.0.2", url, token });
  // 1 KiB every 50 ms: 20 KiB/s, a byte often enough for any idle timeout, too slow on average.
  for (let at = 1024; at < 200 * 1024 && !slow.answered; at += 1024) {
    await slow.send(FILE.slice(at, at + 1024));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const answer = await slow.response;
  slow.close();
  assertOk(answer !== null, "no answer");
  assertEquals(answer.status, 408, answer.body);
  assertEquals(answer.headers.get("connection"), "close");
  assertEquals(answer.headers.get("tus-resumable"), "1.0.0");
  const body = JSON.parse(answer.body);
  assertEquals(body.error, "request_timeout");
  assertMatch(body.message, /slower than 65536 bytes\/s/);
  const kept = Number(answer.headers.get("upload-offset"));
  assertOk(kept >= 1024, `Upload-Offset ${kept}`);
  assertEquals((await tusHead(url, bearer(token))).offset, kept);
  await eventually(
    () => server.server.services.admission.pinnedBytes === 0,
    "the cut PATCH gives its memory back",
  );
  // The upload keeps its reservation; a PATCH at the rate finishes it.
  assertEquals(await server.server.services.ledger.reservedTotal(), FILE.length);
  const rest = await tusPatch(url, kept, FILE.slice(kept), bearer(token));
  assertEquals([rest.status, rest.headers.get("x-storage-cid")], [204, CID]);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});

Deno.test("tus limits: a client holds at most its tier's unfinished uploads (--sponsored-tus-max-open, --tus-max-open); ending one makes room", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-tus-max-open", "3", "--tus-max-open", "4"],
  });
  const create = (i: number, headers: Record<string, string> = {}) =>
    tusCreate(server.url, { cid: `bafktusopen${String(i).padStart(5, "0")}`, length: 10, headers });
  const urls: string[] = [];
  for (let i = 0; i < 3; i++) {
    urls.push(await tusCreated(server.url, { cid: `bafktusopen0000${i}`, length: 10 }));
  }
  const fourth = await create(9);
  assertEquals([fourth.status, (await errorOf(fourth)).error], [429, "too_many_uploads"]);
  assertEquals(fourth.headers.get("tus-resumable"), "1.0.0");
  // Nothing of the refused one is kept or reserved: three uploads of 10 bytes are.
  assertEquals(await server.server.services.ledger.reservedTotal(), 30);
  // Another address has its own count; a token's user has the token tier's.
  using other = Deno.createHttpClient({ localAddress: "127.0.0.2" });
  const elsewhere = await tusCreate(server.url, {
    cid: "bafktusopenother",
    length: 10,
    client: other,
  });
  await elsewhere.body?.cancel();
  assertEquals(elsewhere.status, 201);
  const { token } = await signup(server);
  for (let i = 0; i < 4; i++) {
    const response = await create(20 + i, bearer(token));
    await response.body?.cancel();
    assertEquals(response.status, 201);
  }
  assertEquals((await create(30, bearer(token))).status, 429);
  // Ending one (or finishing it) makes room.
  const ended = await fetch(urls[0], { method: "DELETE", headers: { "tus-resumable": "1.0.0" } });
  await ended.body?.cancel();
  assertEquals(ended.status, 204);
  const again = await create(10);
  await again.body?.cancel();
  assertEquals(again.status, 201);
});

Deno.test("tus limits: a sponsored upload that sends nothing for 10 minutes lets its reservation go until its next byte", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({
    clock,
    args: ["--sponsored-daily-cap", "1000"],
    jobIntervals: { "resumable-expiry": 20 },
  });
  const reserved = () => server.server.services.ledger.reservedTotal();
  const bytes = seededBytes(600, 5);
  const url = await tusCreated(server.url, { cid: "bafkidlereserve1", length: 600 });
  assertEquals(await reserved(), 600);
  clock.advance(11 * 60_000);
  await eventually(async () => await reserved() === 0, "the idle upload's reservation let go");
  // Its next byte takes it again, while it fits.
  assertEquals((await tusPatch(url, 0, bytes.slice(0, 100))).status, 204);
  assertEquals(await reserved(), 600);
  clock.advance(11 * 60_000);
  await eventually(async () => await reserved() === 0, "let go again after another 10 minutes");
  // Meanwhile a neighbour behind the same address uses the day's cap...
  assertEquals((await server.upload("bafkidleneighbor", seededBytes(600, 6))).status, 200);
  // ...and the idle upload's bytes no longer fit: 429, what it has is kept.
  const late = await tusPatch(url, 100, bytes.slice(100));
  assertEquals([late.status, (await errorOf(late)).error], [429, "rate_limited"]);
  assertEquals((await tusHead(url)).offset, 100);
});

Deno.test("tus limits: an idle sponsored upload is let go after a restart too; one let go before stays let go", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  const dataDir = await Deno.makeTempDir({ prefix: "tus-idle-restart-" });
  const options = {
    clock,
    dataDir,
    args: ["--sponsored-daily-cap", "1000"],
    jobIntervals: { "resumable-expiry": 20 },
  };
  try {
    let early: string;
    let late: string;
    {
      await using server = await startTestServer(options);
      const reserved = () => server.server.services.ledger.reservedTotal();
      early = new URL(await tusCreated(server.url, { cid: "bafkidlerestart1", length: 300 }))
        .pathname;
      clock.advance(11 * 60_000);
      await eventually(async () => await reserved() === 0, "the first upload let go");
      late = new URL(await tusCreated(server.url, { cid: "bafkidlerestart2", length: 400 }))
        .pathname;
      clock.advance(5 * 60_000);
    }
    await using server = await startTestServer(options);
    const reserved = () => server.server.services.ledger.reservedTotal();
    // Held again at start: the second (idle for 5 minutes), not the first (let go before).
    assertEquals(await reserved(), 400);
    clock.advance(6 * 60_000);
    await eventually(async () => await reserved() === 0, "the second let go after the restart");
    // The first's next byte takes its reservation again.
    const patched = await tusPatch(`${server.url}${early}`, 0, seededBytes(100, 7));
    assertEquals(patched.status, 204);
    assertEquals(await reserved(), 300);
    assertEquals((await tusHead(`${server.url}${late}`)).offset, 0);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("tus limits: a long PATCH writes its upload's activity when it starts and at most once a minute while bytes come", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({
    clock,
    args: ["--sponsored-daily-cap", "1GiB"],
    jobIntervals: { "resumable-expiry": 0 },
  });
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  const id = new URL(url).pathname.split("/").pop()!;
  const activity = async () =>
    (await server.server.metadata.resumableUploads.get(id))!.lastActivityMs;
  const created = clock.now();
  assertEquals(await activity(), created);
  clock.advance(2 * 60_000);
  const held = await holdPatch(server, { from: "127.0.0.1", url });
  try {
    await eventually(async () => await activity() === created + 120_000, "the start written");
    const partial = `${server.dataDir}/pieces/partial/${id}`;
    clock.advance(30_000); // half a minute: its bytes write nothing
    await held.send(FILE.slice(1024, 65_536));
    await eventually(async () => (await Deno.stat(partial)).size === 65_536, "the bytes stored");
    assertEquals(await activity(), created + 120_000, "nothing written for these bytes");
    clock.advance(31_000); // a minute since the last write: the next bytes write it
    await held.send(FILE.slice(65_536, 131_072));
    await eventually(
      async () => await activity() === created + 181_000,
      "written a minute after the start, not at the half minute",
    );
  } finally {
    held.close();
  }
});
