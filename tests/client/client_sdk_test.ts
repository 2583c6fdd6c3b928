/**
 * The client SDK (src/client/sdk/) against the real server: splitting over the
 * per-file cap and the manifest, byte-identical downloads, resume after an
 * abort (counted in the server's deals), pipelining and concurrency, what
 * corrupted or forged bytes do to a download, quota errors that must not be
 * retried, and 503s and network errors that must.
 */
import * as DataSegment from "@web3-storage/data-segment";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, seededBytes, sha256Hex } from "../helpers/bytes.ts";
import { FakeClock } from "../helpers/clock.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { startSmtpSink } from "../helpers/smtp_sink.ts";
import { eventually, within } from "../helpers/wait.ts";
import { seededRandom } from "../../scripts/lib/random.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/mod.ts";
import {
  MANIFEST_CONTENT_TYPE,
  NetworkError,
  pieceCid,
  serializeManifest,
  StorageClient,
  StorageError,
  VerificationError,
} from "../../src/client/sdk/mod.ts";
import type { ByteSource, Manifest, UploadProgress } from "../../src/client/sdk/mod.ts";

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** What a stream gave before it ended or failed, and how it failed. */
async function drain(
  stream: ReadableStream<Uint8Array>,
): Promise<{ bytes: number; chunks: Uint8Array[]; error: unknown }> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      bytes += chunk.byteLength;
    }
    return { bytes, chunks, error: null };
  } catch (error) {
    return { bytes, chunks, error };
  }
}

interface Call {
  method: string;
  path: string;
  cid: string | null;
  status: number | null;
}

/** A fetch that records every request (and may interfere with it) before the real one runs. */
function recordingFetch(
  intercept?: (call: Call, attempt: () => Promise<Response>) => Promise<Response>,
) {
  const calls: Call[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const call: Call = {
      method: init?.method ?? "GET",
      path: url.pathname,
      cid: url.searchParams.get("cid"),
      status: null,
    };
    calls.push(call);
    const attempt = () => globalThis.fetch(input, init);
    const response = intercept ? await intercept(call, attempt) : await attempt();
    call.status = response.status;
    return response;
  };
  return { fetch: fetchFn, calls };
}

const posts = (calls: Call[]) =>
  calls.filter((c) => c.method === "POST" && c.path === "/api/upload");

/** The server's deals (one per successful upload), by cid. */
function dealCids(server: TestServer): string[] {
  const rows = server.server.db.prepare("SELECT cid FROM deals ORDER BY id").all() as {
    cid: string;
  }[];
  return rows.map((row) => row.cid);
}

async function uploadsInFlight(server: TestServer): Promise<number> {
  const health = await (await server.get("/healthz")).json();
  return health.uploads.inFlight;
}

const FAST_RETRY = { attempts: 5, baseDelayMs: 5, maxDelayMs: 30_000 };

/** A client of the server retrying at once (FAST_RETRY), its requests through `fetch`. */
function retryingClient(server: TestServer, fetch: typeof globalThis.fetch): StorageClient {
  return new StorageClient({ server: server.url, fetch, retry: FAST_RETRY });
}

Deno.test("split: a file over the per-file cap becomes pieces plus a manifest, and downloads whole", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "256KiB"] });
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(MIB + 12_345, 1);
  const events: UploadProgress[] = [];

  const result = await client.upload(new Blob([bytes]), {
    filename: "film.bin",
    contentType: "video/mp4",
    onProgress: (p) => events.push(p),
  });

  // Five pieces of the cap (256 KiB, the default piece size clamped to it), the last shorter.
  const sizes = [256 * KIB, 256 * KIB, 256 * KIB, 256 * KIB, 12_345];
  assertEquals(result.pieces.map((p) => p.size), sizes);
  let offset = 0;
  for (const piece of result.pieces) {
    const slice = bytes.subarray(offset, offset + piece.size);
    assertEquals(piece.cid, DataSegment.Piece.fromPayload(slice).link.toString());
    offset += piece.size;
  }
  const manifest: Manifest = {
    format: "storage-manifest",
    version: 1,
    name: "film.bin",
    contentType: "video/mp4",
    size: bytes.byteLength,
    sha256: await sha256Hex(bytes),
    pieces: result.pieces.map(({ cid, size }) => ({ cid, size })),
  };
  assertEquals(result.manifest, manifest);
  assertEquals(result.size, bytes.byteLength);
  assertEquals(result.retrievalUrl, `${server.url}/p/${result.cid}`);
  assertEquals(result.deals.length, 6, "five pieces and the manifest each made a deal");

  // The manifest is stored last, under its own PieceCIDv2, with its content type and exact bytes.
  const deals = dealCids(server);
  assertEquals(deals.at(-1), result.cid);
  assertEquals(deals.slice(0, -1).sort(), result.pieces.map((p) => p.cid).sort());
  const stored = await server.get(`/p/${result.cid}`);
  assertEquals(stored.headers.get("content-type"), MANIFEST_CONTENT_TYPE);
  assertEquals(stored.headers.get("content-disposition")?.includes("film.bin.manifest.json"), true);
  const manifestBytes = new Uint8Array(await stored.arrayBuffer());
  assertEquals(manifestBytes, serializeManifest(manifest));
  assertEquals(
    new TextDecoder().decode(manifestBytes),
    `{"format":"storage-manifest","version":1,"name":"film.bin","contentType":"video/mp4",` +
      `"size":${bytes.byteLength},"sha256":"${manifest.sha256}","pieces":[` +
      manifest.pieces.map((p) => `{"cid":"${p.cid}","size":${p.size}}`).join(",") + "]}",
  );
  assertEquals(result.cid, DataSegment.Piece.fromPayload(manifestBytes).link.toString());
  const firstPiece = await server.get(`/p/${result.pieces[0].cid}`);
  assertEquals(firstPiece.headers.get("content-type"), "video/mp4");
  assertOk(firstPiece.headers.get("content-disposition")?.includes("film.bin.part1"));
  await firstPiece.body?.cancel();

  // Progress: phases in order, every byte hashed and sent, every piece done.
  const phases = events.map((e) => e.phase).filter((p, i, all) => p !== all[i - 1]);
  assertEquals(phases, ["hashing", "uploading", "manifest", "done"]);
  const last = events.at(-1)!;
  assertEquals(
    [last.bytesHashed, last.bytesSent, last.piecesDone, last.piecesTotal],
    [bytes.byteLength, bytes.byteLength, 5, 5],
  );
  for (let i = 1; i < events.length; i++) {
    assertOk(events[i].bytesHashed >= events[i - 1].bytesHashed);
    assertOk(events[i].bytesSent >= events[i - 1].bytesSent);
  }

  const downloaded = await readAll(await client.download(result.cid));
  assertEquals(downloaded, bytes);
  const info = await client.downloadInfo(result.cid);
  assertEquals(
    { size: info.size, name: info.name, contentType: info.contentType, verified: info.verified },
    { size: bytes.byteLength, name: "film.bin", contentType: "video/mp4", verified: true },
  );
  assertEquals(info.manifest, manifest);
  // Without following, the manifest's own bytes.
  const raw = await readAll(await client.download(result.cid, { followManifest: false }));
  assertEquals(raw, manifestBytes);
});

Deno.test("split: pieceSize below the cap, a Uint8Array and a ByteSource give the same cids", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "300KiB"] });
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(700 * KIB, 2);
  const first = await client.upload(bytes, { pieceSize: 100 * KIB });
  assertEquals(first.pieces.length, 7);
  assertEquals(first.manifest?.name, null);
  assertEquals(first.manifest?.contentType, "application/octet-stream");
  // The same file as a ByteSource: the same manifest, so no byte is sent again; without a
  // token nothing tells whose the pieces are, so each gets a deal of this upload's own.
  const source: ByteSource = {
    size: bytes.byteLength,
    stream: (start, end) => new Blob([bytes.subarray(start, end)]).stream(),
    bytes: (start, end) => Promise.resolve(bytes.slice(start, end)),
  };
  const second = await client.upload(source, { pieceSize: 100 * KIB });
  assertEquals(second.cid, first.cid);
  assertEquals(second.deals.length, 8);
  assertEquals(second.pieces.every((p) => p.via === "deal"), true);
  assertEquals(await readAll(await client.download(first.cid)), bytes);
});

Deno.test("single piece: a file under the cap is one piece, no manifest; a re-run sends nothing", async () => {
  await using server = await startTestServer();
  const recorder = recordingFetch();
  using client = new StorageClient({ server: server.url, fetch: recorder.fetch });
  const bytes = seededBytes(200 * KIB, 3);
  const result = await client.upload(new Blob([bytes], { type: "text/plain" }));
  assertEquals(result.manifest, null);
  assertEquals(result.pieces.length, 1);
  assertEquals(result.cid, DataSegment.Piece.fromPayload(bytes).link.toString());
  assertEquals(result.deals.length, 1);
  const stored = await server.get(`/p/${result.cid}`);
  assertEquals(stored.headers.get("content-type"), "text/plain", "the Blob's type");
  await stored.body?.cancel();

  const again = await client.upload(bytes);
  assertEquals([again.cid, again.pieces[0].via], [result.cid, "deal"]);
  const bodies = recorder.calls.filter((c) => c.method === "POST").map((call) => call.path);
  assertEquals(bodies, ["/api/upload", "/api/deals"], "the second run sent no bytes");
  assertEquals(await readAll(await client.download(result.cid)), bytes);
});

Deno.test("resume: an upload aborted after two pieces sends only the missing pieces when re-run", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "128KiB"] });
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(MIB, 4); // 8 pieces of 128 KiB
  const read: number[] = [];
  const source: ByteSource = {
    size: bytes.byteLength,
    stream: (start, end) => new Blob([bytes.subarray(start, end)]).stream(),
    bytes: (start, end) => {
      read.push(start);
      return Promise.resolve(bytes.slice(start, end));
    },
  };
  const controller = new AbortController();
  const interrupted = await client.upload(source, {
    signal: controller.signal,
    onProgress: (p) => {
      if (p.piecesDone >= 2) controller.abort(new Error("interrupted on purpose"));
    },
  }).then(() => null, (error) => error);
  assertEquals(interrupted?.message, "interrupted on purpose");
  // Aborted requests end on the server too (their bytes are discarded) before we count.
  await eventually(async () => await uploadsInFlight(server) === 0, "no upload in flight");
  const storedFirst = dealCids(server);
  assertOk(storedFirst.length >= 2 && storedFirst.length < 8, `stored ${storedFirst.length}`);

  read.length = 0;
  const result = await client.upload(source);
  const pieces = server.server.db.prepare("SELECT cid FROM pieces").all();
  assertEquals(pieces.length, 9, "each of the 8 pieces and the manifest was stored exactly once");
  const skipped = result.pieces.filter((p) => p.via !== "sent").map((p) => p.cid);
  assertEquals(skipped.sort(), [...storedFirst].sort());
  assertEquals(read.length, 8 - storedFirst.length, "skipped pieces were not even read");
  // Sponsored, nothing tells whose the stored pieces are: each gets a deal of this run too.
  assertEquals(result.deals.length, 9);
  assertEquals(await readAll(await client.download(result.cid)), bytes);

  // A third run finds everything, the manifest included: no byte is sent.
  const third = await client.upload(source);
  assertEquals([third.cid, third.pieces.every((p) => p.via === "deal")], [result.cid, true]);
  assertEquals(server.server.db.prepare("SELECT cid FROM pieces").all().length, 9);
});

Deno.test("pipeline: piece k+1 is hashed while piece k uploads, and at most `concurrency` upload at once", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "128KiB"] });
  const pieceSize = 128 * KIB;
  let hashedBytes = 0;
  let hashedPastSecond: () => void = () => {};
  const secondHashed = new Promise<void>((resolve) => hashedPastSecond = resolve);
  let inFlight = 0;
  let maxInFlight = 0;
  const recorder = recordingFetch(async (call, attempt) => {
    if (call.method !== "POST") return await attempt();
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      // The first POST waits until the next pieces are hashed: it would wait forever if
      // hashing waited for uploads.
      if (posts(recorder.calls).length === 1) await within(secondHashed, 10_000, "hashing ahead");
      return await attempt();
    } finally {
      inFlight--;
    }
  });
  using client = new StorageClient({ server: server.url, fetch: recorder.fetch });
  const bytes = seededBytes(6 * pieceSize, 5);
  const result = await client.upload(bytes, {
    concurrency: 2,
    onProgress: (p) => {
      hashedBytes = p.bytesHashed;
      if (hashedBytes >= 3 * pieceSize) hashedPastSecond();
    },
  });
  assertEquals(result.pieces.length, 6);
  assertEquals(maxInFlight, 2);
  assertEquals(posts(recorder.calls).length, 7);
});

Deno.test("verification: a piece corrupted on the server's disk fails the download", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-max-file-size", "128KiB", "--small-piece-cache", "0"],
  });
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(400 * KIB, 6);
  const result = await client.upload(bytes);
  const [first, second] = result.pieces;
  // Same length, one byte flipped near the end of the second piece.
  const path = `${server.dataDir}/pieces/${shardOf(second.cid)}/${second.cid}`;
  const onDisk = await Deno.readFile(path);
  onDisk[onDisk.length - 10] ^= 0xff;
  await Deno.writeFile(path, onDisk);

  const { bytes: received, chunks, error } = await drain(await client.download(result.cid));
  assertOk(error instanceof VerificationError, `got ${error}`);
  assertEquals([error.cid, error.failure], [second.cid, "cid"]);
  // The first piece arrived whole; of the second, never its last chunk (where the flip is).
  assertOk(received >= first.size && received < first.size + second.size, `${received}`);
  const prefix = new Uint8Array(received);
  let at = 0;
  for (const chunk of chunks) {
    prefix.set(chunk, at);
    at += chunk.byteLength;
  }
  assertEquals(prefix, bytes.subarray(0, received), "nothing unverified-and-wrong was released");

  // A single piece is checked the same way.
  const single = seededBytes(100 * KIB, 7);
  const one = await client.upload(single);
  const onePath = `${server.dataDir}/pieces/${shardOf(one.cid)}/${one.cid}`;
  const stored = await Deno.readFile(onePath);
  stored[0] ^= 1;
  await Deno.writeFile(onePath, stored);
  const failed = await drain(await client.download(one.cid));
  assertOk(failed.error instanceof VerificationError, `got ${failed.error}`);
  assertEquals(failed.error.cid, one.cid);
});

Deno.test("verification: a manifest whose SHA-256 or sizes do not match, or that is not a manifest, fails", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "128KiB"] });
  using client = new StorageClient({ server: server.url, retry: FAST_RETRY });
  const bytes = seededBytes(300 * KIB, 8);
  const result = await client.upload(bytes);
  // The server refuses a manifest type on bytes that are not a servable manifest; another server
  // (or one older than that check) might not, and the SDK trusts the bytes, never the type: so the
  // bytes it must refuse are stored under another type, which it follows just the same.
  const storeManifest = async (text: string, contentType = "application/octet-stream") => {
    const body = new TextEncoder().encode(text);
    const { cid } = await pieceCid(body);
    const response = await server.upload(cid, body, { contentType });
    assertEquals(response.status, 200, await response.clone().text());
    await response.body?.cancel();
    return cid;
  };

  // Right pieces, wrong whole-file digest: everything but the final chunk arrives, then the error.
  const forged = { ...result.manifest!, sha256: "0".repeat(64) };
  const forgedCid = await storeManifest(
    new TextDecoder().decode(serializeManifest(forged)),
    MANIFEST_CONTENT_TYPE,
  );
  const wrongSha = await drain(await client.download(forgedCid));
  assertOk(wrongSha.error instanceof VerificationError, `got ${wrongSha.error}`);
  assertEquals([wrongSha.error.cid, wrongSha.error.failure], [forgedCid, "sha256"]);
  assertOk(wrongSha.bytes < bytes.byteLength);

  // A type does not make bytes a manifest: whoever uploads a cid first sets its type, so the
  // bytes decide, and bytes that are not one come back as a file, checked. (This server refuses
  // the manifest type on them outright.)
  const notManifest = "this is not json at all";
  const refused = await server.upload("bafknotamanifest", notManifest, {
    contentType: MANIFEST_CONTENT_TYPE,
  });
  assertEquals([refused.status, (await refused.json()).error], [400, "invalid_manifest"]);
  const squatted = await storeManifest(notManifest);
  assertEquals(
    new TextDecoder().decode(await readAll(await client.download(squatted))),
    notManifest,
  );

  // Sizes that do not add up, or an unknown version, are refused before any piece.
  const badSize = { ...result.manifest!, size: bytes.byteLength + 1 };
  for (
    const text of [
      new TextDecoder().decode(serializeManifest(badSize)),
      JSON.stringify({ format: "storage-manifest", version: 2 }),
    ]
  ) {
    const cid = await storeManifest(text);
    const error = await client.download(cid).then(() => null, (e) => e);
    assertOk(error instanceof VerificationError, `got ${error}`);
    assertEquals([error.cid, error.failure], [cid, "manifest"]);
  }
});

Deno.test("download: opaque cids pass through, sha2-256 cids are checked, missing ones are not_found", async () => {
  await using server = await startTestServer();
  const recorder = recordingFetch();
  using client = new StorageClient({ server: server.url, fetch: recorder.fetch });
  const bytes = seededBytes(70 * KIB, 9);
  const opaque = await server.upload("opaquename0001", bytes, { filename: "r%C3%A9sum%C3%A9.pdf" });
  await opaque.body?.cancel();
  assertEquals(await readAll(await client.download("opaquename0001")), bytes);
  const info = await client.downloadInfo("opaquename0001");
  assertEquals([info.size, info.name, info.verified], [bytes.byteLength, "résumé.pdf", false]);

  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const { sha256Cid } = await import("../../src/kernel/piece_cid/cid_codec.ts");
  const rawCid = sha256Cid(digest);
  const stored = await server.upload(rawCid, bytes);
  assertEquals(stored.status, 200);
  await stored.body?.cancel();
  assertEquals(await readAll(await client.download(rawCid)), bytes);
  assertEquals((await client.downloadInfo(rawCid)).verified, true);

  recorder.calls.length = 0;
  const missing = await client.download(pieceCidV2(new Uint8Array(32), 10, 0)).then(
    () => null,
    (e) => e,
  );
  assertOk(missing instanceof StorageError, `got ${missing}`);
  assertEquals([missing.status, missing.code], [404, "not_found"]);
  assertEquals(recorder.calls.length, 1, "a 404 is not retried");
});

Deno.test("quota: a quota_exceeded 429 surfaces at once, with its Retry-After, and is not retried", async () => {
  await using server = await startTestServer({ clock: new FakeClock("2026-11-21T12:00:00Z") });
  const { token } = await signup(server, { quotaMb: 1 });
  const recorder = recordingFetch();
  using client = new StorageClient({ server: server.url, token, fetch: recorder.fetch });
  await client.upload(seededBytes(700 * KIB, 10));
  recorder.calls.length = 0;
  const error = await client.upload(seededBytes(700 * KIB, 11)).then(() => null, (e) => e);
  assertOk(error instanceof StorageError, `got ${error}`);
  assertEquals([error.status, error.code], [429, "quota_exceeded"]);
  assertEquals(error.retryAfterSeconds, 12 * 3600, "until midnight UTC");
  assertEquals(posts(recorder.calls).length, 1, "one POST: never retried");
});

Deno.test("retry: a 503 server_busy with Retry-After: 1 is retried until the upload goes through", async () => {
  await using server = await startTestServer({ args: ["--upload-memory", "1KiB"] });
  // Another upload holds the server's upload memory: ours is refused with 503 until it ends.
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const blocker = rawRequest(
    server.server.port,
    "POST /api/upload?cid=blockingupload01 HTTP/1.1\nHost: x\nContent-Type: text/plain\n" +
      "Content-Length: 100000\n",
    { body: "partial", abortWhen: () => released },
  );
  await eventually(async () => await uploadsInFlight(server) === 1, "the blocking upload admitted");
  const recorder = recordingFetch(async (call, attempt) => {
    const response = await attempt();
    if (call.method === "POST" && response.status === 503) release();
    return response;
  });
  using client = retryingClient(server, recorder.fetch);
  const bytes = seededBytes(10 * KIB, 12);
  const result = await client.upload(bytes);
  await blocker;
  assertEquals(posts(recorder.calls).map((c) => c.status), [503, 200]);
  assertEquals(result.deals.length, 1);
  assertEquals(await readAll(await client.download(result.cid)), bytes);
});

Deno.test("retry: a network error is retried; when they persist, NetworkError after the attempts", async () => {
  await using server = await startTestServer();
  let failNextPost = true;
  const recorder = recordingFetch(async (call, attempt) => {
    if (call.method === "POST" && failNextPost) {
      failNextPost = false;
      throw new TypeError("connection reset (simulated)");
    }
    return await attempt();
  });
  using client = retryingClient(server, recorder.fetch);
  const bytes = seededBytes(5 * KIB, 13);
  const result = await client.upload(bytes);
  assertEquals(result.deals.length, 1);
  assertEquals(
    recorder.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    [
      "GET /api/limits 200",
      `GET /api/pieces/${result.cid} 200`,
      "POST /api/upload null", // the simulated network error
      `GET /api/pieces/${result.cid} 200`,
      "POST /api/upload 200",
    ],
  );

  // Nothing listens on this port: every attempt fails, and the error says so.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (listener.addr as Deno.NetAddr).port;
  listener.close();
  using offline = new StorageClient({
    server: `http://127.0.0.1:${closedPort}`,
    retry: { attempts: 3, baseDelayMs: 1 },
  });
  const error = await offline.limits().then(() => null, (e) => e);
  assertOk(error instanceof NetworkError, `got ${error}`);
  assertEquals(error.attempts, 3);
});

Deno.test("abort: an aborted download cancels the fetch; an upload aborted before it starts sends nothing", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "128KiB"] });
  const recorder = recordingFetch();
  using client = new StorageClient({ server: server.url, fetch: recorder.fetch });
  const bytes = seededBytes(600 * KIB, 14);
  const { cid } = await client.upload(bytes);

  const controller = new AbortController();
  const stream = await client.download(cid, { signal: controller.signal });
  const reader = stream.getReader();
  const first = await reader.read();
  assertOk(!first.done && first.value.byteLength > 0);
  controller.abort(new Error("stop"));
  const after = await reader.read().then(() => null, (e) => e);
  assertEquals(after?.message, "stop");

  // Cancelling the stream itself ends it too.
  const cancelled = await client.download(cid);
  await cancelled.cancel();

  recorder.calls.length = 0;
  const aborted = new AbortController();
  aborted.abort(new Error("never mind"));
  const error = await client.upload(bytes, { signal: aborted.signal }).then(() => null, (e) => e);
  assertEquals(error?.message, "never mind");
  assertEquals(recorder.calls, []);
});

Deno.test("pieceCid: the SDK's cids equal @web3-storage/data-segment's for seeded random sizes", async () => {
  const random = seededRandom(2026);
  const sizes = [0, 1, 126, 127, 128, 65, 1_040_384, 1_040_385];
  for (let i = 0; i < 8; i++) sizes.push(Math.floor(random() * 2 * MIB));
  using client = new StorageClient({ server: "http://127.0.0.1:9", hashWorkers: 2 });
  for (const size of sizes) {
    const bytes = seededBytes(size, size);
    const expected = DataSegment.Piece.fromPayload(bytes).link.toString();
    const fromBytes = await pieceCid(bytes, { pool: 0 });
    assertEquals([fromBytes.cid, fromBytes.size], [expected, size], `size ${size}`);
    const fromBlob = await client.pieceCid(new Blob([bytes]));
    assertEquals(fromBlob.cid, expected, `Blob of ${size} on the pool`);
    const fromStream = await pieceCid(new Blob([bytes]).stream(), { pool: 2 });
    assertEquals(fromStream.cid, expected, `stream of ${size}`);
  }
});

Deno.test("account: signup, limits, files, usage, tokens list and revoke, extend round trip", async () => {
  await using server = await startTestServer();
  using anonymous = new StorageClient({ server: server.url });
  const created = await anonymous.signup({ email: "Dev@Example.org", label: "laptop" });
  assertOk("token" in created, JSON.stringify(created));
  assertEquals([created.email, created.scopes], ["dev@example.org", ["put", "get", "list", "pin"]]);
  assertEquals((await anonymous.limits()).tier, "sponsored");
  const unauthorised = await anonymous.listFiles().then(() => null, (e) => e);
  assertOk(unauthorised instanceof StorageError);
  assertEquals([unauthorised.status, unauthorised.code], [401, "invalid_token"]);

  using client = new StorageClient({ server: server.url, token: created.token });
  const limits = await client.limits({ size: 10 });
  assertEquals([limits.tier, limits.accepted, limits.reason], ["token", true, null]);
  const bytes = seededBytes(3000, 15);
  const uploaded = await client.upload(bytes, { filename: "notes.txt", contentType: "text/plain" });
  const files = await client.listFiles({ limit: 10 });
  assertEquals(files.files.map((f) => [f.cid, f.filename, f.size]), [
    [uploaded.cid, "notes.txt", 3000],
  ]);
  assertEquals(files.nextCursor, null);
  const all = [];
  for await (const file of client.allFiles({ pageSize: 1 })) all.push(file.dealId);
  assertEquals(all, uploaded.deals);
  const usage = await client.usage();
  assertEquals(usage.days.at(-1)?.bytes, 3000);
  const extended = await client.extendDeal(uploaded.deals[0]);
  assertEquals(extended.term, "730 days");

  const second = await anonymous.signup({ email: "dev@example.org", label: "ci", scopes: ["put"] });
  assertOk("token" in second);
  const tokens = await client.listTokens();
  assertEquals(tokens.tokens.map((t) => [t.label, t.current]).sort(), [
    ["ci", false],
    ["laptop", true],
  ]);
  const revoked = await client.revokeToken(second.jti);
  assertEquals([revoked.jti, revoked.revoked], [second.jti, true]);
  using ci = new StorageClient({ server: server.url, token: second.token });
  const refused = await ci.upload(bytes).then(() => null, (e) => e);
  assertOk(refused instanceof StorageError);
  assertEquals(refused.code, "revoked_token");
  const unknownDeal = await client.extendDeal("stage-doesnotexist").then(() => null, (e) => e);
  assertEquals(unknownDeal?.code, "not_found");
});

Deno.test("account: in verify mode signup answers verification_sent, and the mailed code gives the token", async () => {
  await using sink = startSmtpSink();
  await using server = await startTestServer({
    args: ["--signup", "verify", "--smtp-url", sink.url, "--mail-from", "storage@example.org"],
  });
  using client = new StorageClient({ server: server.url });
  const sent = await client.signup({ email: "V@example.org", label: "ci", scopes: ["put"] });
  assertEquals(sent, { status: "verification_sent", email: "v@example.org" });
  const mail = await sink.nextMessage();
  const code = /finish signing up at \S+ is (\d{8})\./.exec(mail.data.replace(/=\r\n/g, ""))?.[1];
  assertOk(code, mail.data);
  const wrongCode = code.replace(/^./, (d) => String((Number(d) + 1) % 10));
  const wrong = await client.verifySignup("v@example.org", wrongCode).then(() => null, (e) => e);
  assertOk(wrong instanceof StorageError, `got ${wrong}`);
  assertEquals([wrong.status, wrong.code], [400, "invalid_code"]);
  const result = await client.verifySignup("v@example.org", code);
  assertEquals([result.email, result.scopes], ["v@example.org", ["put"]]);
  using withToken = new StorageClient({ server: server.url, token: result.token });
  assertEquals((await withToken.limits()).tier, "token");
});
