/**
 * No client can starve the others: the upload memory pool is shared fairly
 * (a client, by IP or by token subject, holds at most a quarter of it and
 * never more than the pool still has free; only its own uploads get 503),
 * POST /api/piece-cids is admitted the same way, and a body slower than
 * --body-min-rate is cut with 408 and gives back all it reserved. Clients are
 * 127.0.0.x source addresses.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { MIB } from "../helpers/bytes.ts";
import { holdUpload } from "../helpers/held_upload.ts";
import type { HeldUpload } from "../helpers/held_upload.ts";
import { tempFiles } from "../helpers/pieces.ts";
import { patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";

/** What one upload of 1 MiB or more books: two 1 MiB read buffers and its connection. */
const LARGE_UPLOAD_PINS = 2.75 * MIB;

/**
 * Opens uploads from `from` until one is refused (or `max` are admitted);
 * returns the admitted ones and the refusal.
 */
async function holdUntilRefused(
  server: TestServer,
  options: { from: string; path: (i: number) => string; headers?: string[]; max?: number },
) {
  const admission = server.server.services.admission;
  const held: HeldUpload[] = [];
  for (let i = 0; i < (options.max ?? 16); i++) {
    const before = admission.pinnedBytes;
    const upload = await holdUpload({
      port: server.server.port,
      from: options.from,
      path: options.path(i),
      length: 8 * MIB,
      headers: options.headers,
    });
    await eventually(
      () => upload.answered || admission.pinnedBytes > before,
      `upload ${i} from ${options.from} admitted or refused`,
    );
    if (upload.answered) return { held, refusal: (await upload.response)! };
    held.push(upload);
  }
  return { held, refusal: null };
}

async function uploadFrom(server: TestServer, from: string, cid: string, size: number) {
  using client = Deno.createHttpClient({ localAddress: from });
  const response = await fetch(`${server.url}/api/upload?cid=${cid}`, {
    method: "POST",
    client,
    headers: { "content-type": "application/octet-stream" },
    body: patternBytes(size, size),
  });
  await response.body?.cancel();
  return response.status;
}

async function releaseAll(server: TestServer, held: HeldUpload[]) {
  for (const upload of held) upload.close();
  await eventually(
    async () =>
      server.server.services.admission.pinnedBytes === 0 &&
      await server.server.services.ledger.reservedTotal() === 0,
    "closed uploads give back their memory and their reservations",
  );
}

Deno.test("fair share: greedy addresses get 503 for their own uploads; another address still gets in", async () => {
  await using server = await startTestServer({ args: ["--upload-memory", "32MiB"] });
  const pool = 32 * MIB;
  const admission = server.server.services.admission;
  const held: HeldUpload[] = [];
  try {
    // Five addresses each open 8 MiB uploads (1 KiB sent) until refused.
    for (const from of ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]) {
      const result = await holdUntilRefused(server, { from, path: (i) => pathOf(from, i) });
      held.push(...result.held);
      assertOk(result.refusal !== null, `${from} was never refused`);
      assertEquals(result.refusal.status, 503);
      assertEquals(result.refusal.headers.get("retry-after"), "1");
      const body = JSON.parse(result.refusal.body);
      assertEquals(body.error, "server_busy");
      assertMatch(body.message, /your share/i);
      assertOk(admission.heldBy(`v4:${from}`) <= pool / 4, `${from} holds over a quarter`);
    }
    // Without the fair share, 11 of them would have filled the pool; now there is room.
    assertOk(pool - admission.pinnedBytes >= LARGE_UPLOAD_PINS, String(admission.pinnedBytes));
    assertEquals(await uploadFrom(server, "127.0.0.9", "bafkfairshare09", MIB), 200);
    assertEquals(await uploadFrom(server, "127.0.0.10", "bafkfairshare10", 100), 200);
  } finally {
    await releaseAll(server, held);
  }
  assertEquals(await tempFiles(server.dataDir), []);
});

function pathOf(from: string, i: number): string {
  return `/api/upload?cid=bafkgreedy${from.split(".").at(-1)}x${i}`;
}

Deno.test("fair share: a token is one client from any address, uploads and piece-cid bodies alike", async () => {
  await using server = await startTestServer({ args: ["--upload-memory", "32MiB"] });
  const { token } = await signup(server);
  const headers = [`Authorization: Bearer ${token}`];
  const admission = server.server.services.admission;
  const held: HeldUpload[] = [];
  try {
    // Alternating addresses and endpoints: the token's subject is what fills its share.
    const first = await holdUntilRefused(server, {
      from: "127.0.0.2",
      path: (i) => `/api/upload?cid=bafktokenshare${i}`,
      headers,
      max: 2,
    });
    held.push(...first.held);
    assertEquals([first.held.length, first.refusal], [2, null]);
    const second = await holdUntilRefused(server, {
      from: "127.0.0.3",
      path: () => "/api/piece-cids",
      headers,
    });
    held.push(...second.held);
    assertEquals(second.held.length, 0, "the share was the token's, not the address's");
    assertEquals(second.refusal?.status, 503);
    assertEquals(JSON.parse(second.refusal!.body).error, "server_busy");
    assertOk(admission.pinnedBytes <= 32 * MIB / 4);
    // The same address without the token is another client.
    assertEquals(await uploadFrom(server, "127.0.0.3", "bafkanonymous01", 100), 200);
  } finally {
    await releaseAll(server, held);
  }
});

Deno.test("min rate: a body slower than --body-min-rate is cut with 408 and gives back all it reserved", async () => {
  await using server = await startTestServer({
    args: ["--body-min-rate", "64KiB", "--body-rate-grace", "1"],
  });
  const { token } = await signup(server);
  for (const path of ["/api/upload?cid=bafkslowbody001", "/api/piece-cids"]) {
    const upload = await holdUpload({
      port: server.server.port,
      from: "127.0.0.2",
      path,
      length: MIB,
      headers: [`Authorization: Bearer ${token}`],
    });
    // 1 KiB every 50 ms: 20 KiB/s, a byte often enough for any idle timeout, too slow on average.
    for (let sent = 0; sent < 200 && !upload.answered; sent++) {
      await upload.send(patternBytes(1024));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const response = await upload.response;
    upload.close();
    assertOk(response !== null, `${path}: no answer`);
    assertEquals(response.status, 408, `${path}: ${response.body}`);
    assertEquals(response.headers.get("connection"), "close");
    const body = JSON.parse(response.body);
    assertEquals(body.error, "request_timeout");
    assertMatch(body.message, /slower than 65536 bytes\/s/);
    await eventually(
      async () =>
        server.server.services.admission.pinnedBytes === 0 &&
        await server.server.services.ledger.reservedTotal() === 0,
      `${path}: the cut body's memory and reservation are given back`,
    );
  }
  assertEquals(await tempFiles(server.dataDir), []);
  // A body at the rate goes through.
  const fast = await server.upload("bafkfastbody001", patternBytes(256 * 1024));
  assertEquals(fast.status, 200);
  await fast.body?.cancel();
});
