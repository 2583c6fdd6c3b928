/**
 * A resumable upload over time: it expires a day after its creation,
 * whatever it sends meanwhile (and gives its reservation back), survives a restart of the server (its bytes,
 * its reservation, its offset; the cid check and a CAR's check rebuilt from
 * the stored bytes, so a CAR's blocks from before the restart are indexed
 * too), and a PATCH the client abandoned keeps what arrived and lets the next
 * request in at once.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { FakeClock } from "../helpers/clock.ts";
import { partialFiles, storedPieces } from "../helpers/pieces.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCidOf, tusCreated, tusHead, tusPatch } from "../helpers/tus_requests.ts";
import { eventually, within } from "../helpers/wait.ts";
import { blocksOf, CAR_TYPE, packFiles } from "../helpers/ipfs.ts";
import { withTempDir } from "../helpers/files.ts";

const FILE = seededBytes(6 * MIB + 4321, 27);
const CID = pieceCidOf(FILE);
const DAY_MS = 86_400_000;

async function reserved(server: TestServer): Promise<number> {
  return await server.server.services.ledger.reservedTotal();
}

/** Bytes of the one partial upload on disk (0 before it exists). */
async function partialSize(server: TestServer): Promise<number> {
  const [name] = await partialFiles(server.dataDir);
  if (name === undefined) return 0;
  return (await Deno.stat(`${server.dataDir}/pieces/partial/${name}`)).size;
}

/** A PATCH head for `length` bytes at offset, to send by hand. */
function patchHead(url: string, offset: number, length: number): string {
  return `PATCH ${new URL(url).pathname} HTTP/1.1\nHost: x\nTus-Resumable: 1.0.0\n` +
    `Content-Type: application/offset+octet-stream\nUpload-Offset: ${offset}\n` +
    `Content-Length: ${length}\n`;
}

Deno.test("tus: an upload expires a day after its creation, whatever it sends, and gives its reservation back", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({ clock, jobIntervals: { "resumable-expiry": 20 } });
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  clock.advance(20 * 3_600_000);
  assertEquals((await tusPatch(url, 0, FILE.slice(0, MIB))).status, 204);
  // 23 hours after creation, 3 after the last byte: still there, but a byte moves nothing.
  clock.advance(3 * 3_600_000);
  assertEquals((await tusPatch(url, MIB, FILE.slice(MIB, MIB + 1))).status, 204);
  const head = await tusHead(url);
  assertEquals([head.status, head.offset], [200, MIB + 1]);
  assertEquals(Date.parse(head.headers.get("upload-expires")!), Date.parse("2026-11-22T10:00:00Z"));
  assertEquals(await reserved(server), FILE.length);
  clock.advance(3_600_000 + 1000);
  await eventually(async () => await reserved(server) === 0, "the sweep releases the reservation");
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals((await tusHead(url)).status, 404);
  const late = await tusPatch(url, MIB + 1, FILE.slice(MIB + 1));
  assertEquals([late.status, (await errorOf(late)).error], [404, "not_found"]);
});

Deno.test("tus: a request for an expired upload finds it gone before any sweep", async () => {
  const clock = new FakeClock("2026-11-21T10:00:00Z");
  await using server = await startTestServer({
    clock,
    jobIntervals: { "resumable-expiry": 3_600_000 },
  });
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  clock.advance(DAY_MS + 1);
  assertEquals((await tusHead(url)).status, 404);
  assertEquals(await reserved(server), 0);
  assertEquals(await partialFiles(server.dataDir), []);
});

Deno.test("tus: a restart in the middle resumes: offset, reservation, and the cid check from the stored bytes", async () => {
  await withTempDir("storage-tus-restart-", async (dataDir) => {
    let url: string;
    let token: string;
    {
      await using first = await startTestServer({ dataDir });
      token = (await signup(first)).token;
      url = await tusCreated(first.url, { cid: CID, length: FILE.length, headers: bearer(token) });
      assertEquals((await tusPatch(url, 0, FILE.slice(0, 4 * MIB), bearer(token))).status, 204);
    }
    await using second = await startTestServer({ dataDir });
    assertEquals(await reserved(second), FILE.length, "the reservation is held again");
    const moved = url.replace(new URL(url).origin, second.url);
    assertEquals((await tusHead(moved, bearer(token))).offset, 4 * MIB);
    const last = await tusPatch(moved, 4 * MIB, FILE.slice(4 * MIB), bearer(token));
    assertEquals(last.status, 204, await last.text());
    assertEquals(last.headers.get("x-storage-cid"), CID);
    assertEquals(await reserved(second), 0);
    assertEquals(new Uint8Array(await (await second.get(`/p/${CID}`)).arrayBuffer()), FILE);
  });
});

Deno.test("tus: after a restart, bytes that do not hash to the cid are still caught", async () => {
  await withTempDir("storage-tus-restart-", async (dataDir) => {
    let url: string;
    {
      await using first = await startTestServer({ dataDir });
      url = await tusCreated(first.url, { cid: CID, length: FILE.length });
      const wrong = FILE.slice(0, 4 * MIB);
      wrong[12345] ^= 1;
      assertEquals((await tusPatch(url, 0, wrong)).status, 204);
    }
    await using second = await startTestServer({ dataDir });
    const moved = url.replace(new URL(url).origin, second.url);
    const last = await tusPatch(moved, 4 * MIB, FILE.slice(4 * MIB));
    assertEquals([last.status, (await errorOf(last)).error], [400, "cid_mismatch"]);
    assertEquals(await storedPieces(second.dataDir), []);
    assertEquals(await reserved(second), 0);
  });
});

Deno.test("tus: a restart in the middle of a CAR; the blocks sent before it are indexed too", async () => {
  const { car } = await packFiles({ "a.bin": FILE.slice(0, 3 * MIB), "b.txt": new Uint8Array(9) });
  const cid = pieceCidOf(car);
  await withTempDir("storage-tus-restart-", async (dataDir) => {
    let url: string;
    {
      await using first = await startTestServer({ dataDir });
      url = await tusCreated(first.url, { cid, length: car.length, filetype: CAR_TYPE });
      assertEquals((await tusPatch(url, 0, car.slice(0, 1_500_000))).status, 204);
    }
    await using second = await startTestServer({ dataDir });
    const moved = url.replace(new URL(url).origin, second.url);
    const last = await tusPatch(moved, 1_500_000, car.slice(1_500_000));
    assertEquals(last.status, 204, await last.text());
    const blocks = await blocksOf(car);
    assertEquals(await second.server.metadata.blocks.countBlocks(cid), blocks.length);
    const first = await second.get(`/ipfs/${blocks[0].cid}?format=raw`);
    assertEquals(new Uint8Array(await first.arrayBuffer()), blocks[0].bytes);
  });
});

Deno.test("tus: a PATCH cut off by its client keeps what arrived; the upload continues from there", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  const port = server.server.port;
  await rawRequest(port, patchHead(url, 0, FILE.length), {
    body: FILE.slice(0, 3 * MIB),
    // Gone once the server has written some of it.
    abortWhen: () => eventually(async () => await partialSize(server) >= MIB, "bytes on disk"),
  });
  // HEAD waits for the cut PATCH to record what it has, so the offset does not move after.
  const { offset } = await tusHead(url);
  assertOk(offset !== null && offset >= MIB && offset <= 3 * MIB, `offset ${offset}`);
  assertEquals((await tusHead(url)).offset, offset);
  const rest = await tusPatch(url, offset!, FILE.slice(offset!));
  assertEquals(rest.status, 204, await rest.text());
  assertEquals(rest.headers.get("x-storage-cid"), CID);
});

Deno.test("tus: a HEAD stops a PATCH whose client went silent, instead of waiting for its timeout", async () => {
  await using server = await startTestServer({ args: ["--body-idle-timeout", "300"] });
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.server.port });
  try {
    const head = new TextEncoder().encode(
      patchHead(url, 0, FILE.length).replaceAll("\n", "\r\n") + "\r\n",
    );
    await conn.write(head);
    let sent = 0;
    while (sent < 2 * MIB) sent += await conn.write(FILE.subarray(sent, 2 * MIB));
    await eventually(async () => await partialSize(server) >= MIB, "bytes on disk");
    // The connection stays open and silent: only the newer request can end that PATCH.
    const { offset } = await within(tusHead(url), 10_000, "HEAD while a PATCH hangs");
    assertOk(offset !== null && offset >= MIB && offset <= 2 * MIB, `offset ${offset}`);
  } finally {
    conn.close();
  }
});
