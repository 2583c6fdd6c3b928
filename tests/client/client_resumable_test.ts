/**
 * The SDK's large pieces go through the tus endpoint: progress counts bytes
 * on the wire (not only pieces the server acknowledged), a connection that
 * drops in the middle of a piece continues from what the server kept, a
 * resume store carries an unfinished piece over to a later run, and a piece
 * someone else stored gets the caller's own deal without its bytes.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { bearer, signup, startTestServer } from "../helpers/server.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import type { ResumeStore, UploadProgress } from "../../src/client/sdk/mod.ts";

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 50 };

/** A fetch whose first PATCH body breaks off after `cutAt` bytes, as a dropped connection. */
function droppingFetch(cutAt: number) {
  const patches: { offset: number }[] = [];
  const fetchFn: typeof fetch = (input, init) => {
    if (init?.method !== "PATCH") return fetch(input, init);
    const offset = Number(new Headers(init.headers).get("upload-offset"));
    patches.push({ offset });
    if (patches.length > 1 || !(init.body instanceof ReadableStream)) return fetch(input, init);
    let passed = 0;
    const body = init.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          passed += chunk.byteLength;
          if (passed > cutAt) controller.error(new Error("connection dropped (simulated)"));
          else controller.enqueue(chunk);
        },
      }),
    );
    return fetch(input, { ...init, body });
  };
  return { fetch: fetchFn, patches };
}

Deno.test("sdk: a large piece's progress counts bytes on the wire before the server answers", async () => {
  await using server = await startTestServer();
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(24 * MIB, 41);
  const events: UploadProgress[] = [];
  const result = await client.upload(bytes, { onProgress: (p) => events.push(p) });
  const midway = events.filter((e) =>
    e.piecesDone === 0 && e.bytesSent > 0 && e.bytesSent < bytes.length
  );
  assertOk(midway.length >= 5, `${midway.length} reports while the piece was on the wire`);
  assertEquals(midway.every((e) => e.bytesAcknowledged === 0), true);
  assertEquals(events.at(-1)!.bytesSent, bytes.length);
  assertEquals(events.at(-1)!.bytesAcknowledged, bytes.length);
  assertEquals(result.pieces[0].via, "sent");
  assertEquals(new Uint8Array(await (await server.get(`/p/${result.cid}`)).arrayBuffer()), bytes);
});

Deno.test("sdk: a connection dropped in the middle of a piece goes on from the server's offset", async () => {
  await using server = await startTestServer();
  const dropping = droppingFetch(10 * MIB);
  using client = new StorageClient({
    server: server.url,
    retry: FAST_RETRY,
    fetch: dropping.fetch,
  });
  const bytes = seededBytes(24 * MIB, 42);
  const result = await client.upload(bytes);
  assertEquals(dropping.patches.length, 2, "one PATCH cut off, one that finished");
  assertEquals(dropping.patches[0].offset, 0);
  const resumedAt = dropping.patches[1].offset;
  assertOk(resumedAt > 0 && resumedAt <= 10 * MIB, `resumed at ${resumedAt}`);
  assertEquals(new Uint8Array(await (await server.get(`/p/${result.cid}`)).arrayBuffer()), bytes);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});

Deno.test("sdk: with a resume store, a later run continues an unfinished piece", async () => {
  await using server = await startTestServer();
  const kept = new Map<string, string>();
  const store: ResumeStore = {
    get: (key) => kept.get(key),
    set: (key, url) => void kept.set(key, url),
    delete: (key) => void kept.delete(key),
  };
  const bytes = seededBytes(20 * MIB, 43);
  const stop = new AbortController();
  using first = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const aborted = await first.upload(bytes, {
    resumeStore: store,
    signal: stop.signal,
    onProgress: (p) => {
      if (p.bytesSent >= 8 * MIB) stop.abort(new Error("the page was closed"));
    },
  }).then(() => null, (error) => error);
  assertEquals(aborted?.message, "the page was closed");
  assertEquals(kept.size, 1, "the unfinished piece's URL is kept");
  const [url] = kept.values();
  // The server keeps what arrived before the abort (HEAD waits for it to be recorded).
  const head = await fetch(url, { method: "HEAD", headers: { "tus-resumable": "1.0.0" } });
  const offset = Number(head.headers.get("upload-offset"));
  assertOk(offset > 0, `the server kept ${offset} bytes`);

  const dropping = droppingFetch(Infinity);
  using second = new StorageClient({ server: server.url, fetch: dropping.fetch });
  const result = await second.upload(bytes, { resumeStore: store });
  assertEquals(dropping.patches.map((p) => p.offset), [offset], "one PATCH, from the offset");
  assertEquals(kept.size, 0, "forgotten once finished");
  assertEquals(new Uint8Array(await (await server.get(`/p/${result.cid}`)).arrayBuffer()), bytes);
});

Deno.test("sdk: a file someone else stored gets the caller's own deal, without its bytes", async () => {
  await using server = await startTestServer();
  const alice = await signup(server, { email: "alice@example.org" });
  const bob = await signup(server, { email: "bob@example.org" });
  const bytes = seededBytes(6 * MIB, 44);
  using aliceClient = new StorageClient({ server: server.url, token: alice.token });
  const first = await aliceClient.upload(bytes);
  const dropping = droppingFetch(Infinity);
  using bobClient = new StorageClient({
    server: server.url,
    token: bob.token,
    fetch: dropping.fetch,
  });
  const second = await bobClient.upload(bytes);
  assertEquals([second.cid, second.pieces[0].via], [first.cid, "deal"]);
  assertEquals(dropping.patches, [], "no bytes sent");
  const files = await (await server.get("/api/files", { headers: bearer(bob.token) })).json();
  assertEquals(files.files.map((f: { dealId: string }) => f.dealId), second.deals);
  const usage = await (await server.get("/api/limits", { headers: bearer(bob.token) })).json();
  assertEquals(usage.usedTodayBytes, bytes.length, "charged as an upload of the bytes");
  // Bob again: the deal is his already, so nothing more is charged.
  const third = await bobClient.upload(bytes);
  assertEquals([third.pieces[0].via, third.deals], ["owned", []]);
});
