/**
 * GET and HEAD /f/{cid}: the whole file behind a manifest, uploaded by the
 * SDK exactly as the CLI and the page split a big file, on the disk store
 * and on S3. Ranges across piece boundaries, only the touched pieces opened,
 * the answer cut off (never short or wrong bytes) when a piece fails
 * mid-stream, /f/ of any other cid answering as /p/, and the upload check:
 * a manifest is accepted only when every piece it lists is stored.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { seededBytes } from "../helpers/bytes.ts";
import { errorOf, patternBytes } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { putObject, signed } from "../helpers/s3.ts";
import { startServerOn, storeTests } from "../helpers/stores.ts";
import type { StoreServer } from "../helpers/stores.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import type { UploadResult } from "../../src/client/sdk/mod.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../../src/kernel/manifest_format.ts";
import { pieceCid } from "../../src/client/sdk/mod.ts";
import { shardOf } from "../../src/driver/disk/layout.ts";

const KIB = 1024;
const PIECE = 100 * KIB;
/** Three full pieces and a short last one. */
const FILE = seededBytes(3 * PIECE + 4321, 11);

/** FILE uploaded by the SDK in pieces of PIECE bytes, with its manifest. */
async function splitUpload(server: TestServer): Promise<UploadResult> {
  using client = new StorageClient({ server: server.url, hashWorkers: 0 });
  const result = await client.upload(FILE, {
    filename: "clip “one”.webm",
    contentType: "video/webm",
    pieceSize: PIECE,
  });
  assertEquals(result.pieces.length, 4);
  return result;
}

async function get(server: TestServer, cid: string, headers: Record<string, string> = {}) {
  const response = await server.get(`/f/${cid}`, { headers });
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

storeTests(
  "files: /f/ of a manifest is the whole file, with the manifest's type and name",
  async (server) => {
    const { cid } = await splitUpload(server);
    const { response, bytes } = await get(server, cid);
    assertEquals(response.status, 200);
    assertEquals(bytes, FILE);
    const h = response.headers;
    assertEquals(h.get("content-type"), "video/webm");
    assertEquals(h.get("content-length"), String(FILE.length));
    assertEquals(
      h.get("content-disposition"),
      `inline; filename="clip _one_.webm"; filename*=UTF-8''clip%20%E2%80%9Cone%E2%80%9D.webm`,
    );
    assertEquals(h.get("etag"), `"${cid}.file"`);
    assertEquals(h.get("accept-ranges"), "bytes");
    assertEquals(h.get("x-service-piece-cid"), cid);
    assertEquals(h.get("x-content-type-options"), "nosniff");
    assertEquals(h.get("content-security-policy"), "sandbox");
    // The manifest itself stays at /p/, as the bytes it is.
    const manifest = await server.get(`/p/${cid}`);
    assertEquals(manifest.headers.get("content-type"), MANIFEST_CONTENT_TYPE);
    await manifest.body?.cancel();

    const head = await server.get(`/f/${cid}`, { method: "HEAD" });
    assertEquals([head.status, head.headers.get("content-length")], [200, String(FILE.length)]);
    assertEquals(head.headers.get("etag"), `"${cid}.file"`);
    const again = await server.get(`/f/${cid}`, { headers: { "if-none-match": `"${cid}.file"` } });
    assertEquals(again.status, 304);
    await again.body?.cancel();
  },
);

storeTests("files: ranges cross piece boundaries", async (server) => {
  const { cid } = await splitUpload(server);
  const size = FILE.length;
  const cases: [string, number, number][] = [
    ["bytes=0-0", 0, 0],
    [`bytes=${PIECE - 10}-${PIECE + 9}`, PIECE - 10, PIECE + 9],
    [`bytes=${PIECE - 1}-${3 * PIECE}`, PIECE - 1, 3 * PIECE],
    [`bytes=${PIECE}-${2 * PIECE - 1}`, PIECE, 2 * PIECE - 1],
    [`bytes=${2 * PIECE + 5}-`, 2 * PIECE + 5, size - 1],
    ["bytes=-5000", size - 5000, size - 1],
    [`bytes=0-${size * 2}`, 0, size - 1],
  ];
  for (const [range, first, last] of cases) {
    const { response, bytes } = await get(server, cid, { range });
    assertEquals(response.status, 206, range);
    assertEquals(response.headers.get("content-range"), `bytes ${first}-${last}/${size}`);
    assertEquals(response.headers.get("content-length"), String(last - first + 1));
    assertEquals(bytes, FILE.subarray(first, last + 1), range);
  }
  const refused = await server.get(`/f/${cid}`, { headers: { range: `bytes=${size}-` } });
  assertEquals([refused.status, refused.headers.get("content-range")], [416, `bytes */${size}`]);
  assertEquals((await errorOf(refused)).error, "range_not_satisfiable");
  // If-Range names the file's ETag, not the manifest piece's.
  const honoured = await get(server, cid, { range: "bytes=1-2", "if-range": `"${cid}.file"` });
  assertEquals(honoured.response.status, 206);
  const stale = await get(server, cid, { range: "bytes=1-2", "if-range": `"${cid}"` });
  assertEquals([stale.response.status, stale.bytes.length], [200, size]);
});

storeTests("files: a range opens only the pieces it touches", async (server) => {
  const result = await splitUpload(server);
  // The first two pieces are gone from the store (their rows stay): a range in the last two
  // still answers, since those two are never opened.
  for (const piece of result.pieces.slice(0, 2)) await removeBehindTheServer(server, piece.cid);
  const { response, bytes } = await get(server, result.cid, { range: `bytes=${2 * PIECE + 1}-` });
  assertEquals(response.status, 206);
  assertEquals(bytes, FILE.subarray(2 * PIECE + 1));
  const whole = await server.get(`/f/${result.cid}`);
  assertEquals(whole.status, 500, "the first piece is opened before the head: a status, not a cut");
  assertEquals((await errorOf(whole)).error, "internal_error");
});

storeTests(
  "files: a piece missing mid-stream cuts the answer off, logged and counted",
  async (server) => {
    const result = await splitUpload(server);
    await removeBehindTheServer(server, result.pieces[2].cid);
    await expectCutOff(server, result, result.pieces[2].cid);
  },
);

storeTests("files: a piece of another size mid-stream cuts the answer off", async (server) => {
  const result = await splitUpload(server);
  const victim = result.pieces[1].cid;
  await replaceBehindTheServer(server, victim, FILE.slice(PIECE, 2 * PIECE - 7));
  await expectCutOff(server, result, victim);
});

storeTests("files: a piece marked corrupt mid-stream cuts the answer off", async (server) => {
  const result = await splitUpload(server);
  markCorrupt(server, result.pieces[3].cid);
  await expectCutOff(server, result, result.pieces[3].cid);
  // Marked first, it is a status: the range starts in it.
  const { response } = await get(server, result.cid, { range: `bytes=${3 * PIECE}-` });
  assertEquals(response.status, 503);
});

storeTests("files: /f/ of any other cid answers as /p/ does", async (server) => {
  for (
    const [cid, bytes] of [["bafkplainfile01", patternBytes(300 * KIB)], [
      "bafksmall00001",
      patternBytes(10),
    ]] as const
  ) {
    const upload = await server.upload(cid, bytes, {
      contentType: "text/plain",
      filename: "a.txt",
    });
    assertEquals(upload.status, 200);
    await upload.body?.cancel();
    for (const headers of <Record<string, string>[]> [{}, { range: "bytes=3-8" }]) {
      const direct = await server.get(`/p/${cid}`, { headers });
      const file = await server.get(`/f/${cid}`, { headers });
      assertEquals(file.status, direct.status);
      assertEquals(
        [...file.headers].filter(([n]) => n !== "date"),
        [...direct.headers].filter(([n]) => n !== "date"),
      );
      assertEquals(
        new Uint8Array(await file.arrayBuffer()),
        new Uint8Array(await direct.arrayBuffer()),
      );
    }
  }
  const missing = await server.get("/f/bafkmissing0001");
  assertEquals([missing.status, (await errorOf(missing)).error], [404, "not_found"]);
  const bad = await server.get("/f/short");
  assertEquals([bad.status, (await errorOf(bad)).error], [400, "invalid_cid"]);
});

Deno.test("files: a manifest whose pieces are not all stored is 400 manifest_incomplete, nothing kept", async () => {
  await using server = await startServerOn("disk");
  using client = new StorageClient({ server: server.url, hashWorkers: 0 });
  const piece = patternBytes(5000, 1);
  const stored = await client.upload(piece);
  const missing = await cidOf(patternBytes(6000, 2));
  const manifest = {
    format: "storage-manifest" as const,
    version: 1 as const,
    name: "x.bin",
    contentType: "application/octet-stream",
    size: 11000,
    sha256: "0".repeat(64),
    pieces: [{ cid: stored.cid, size: 5000 }, { cid: missing, size: 6000 }],
  };
  const before = await usedToday(server);
  const { status, error, cid } = await uploadManifest(server, serializeManifest(manifest));
  assertEquals([status, error.error], [400, "manifest_incomplete"]);
  assertOk(error.message.includes(missing), error.message);
  assertEquals((await server.get(`/p/${cid}`)).status, 404, "nothing stored");
  assertEquals(await usedToday(server), before, "nothing charged");

  for (
    const [body, why] of [
      [new TextEncoder().encode("not a manifest"), "not JSON"],
      [
        serializeManifest({
          ...manifest,
          pieces: [manifest.pieces[0]],
          size: 5000,
          contentType: "no type",
        }),
        "a bad type",
      ],
    ] as const
  ) {
    const refused = await uploadManifest(server, body);
    assertEquals([refused.status, refused.error.error], [400, "invalid_manifest"], why);
  }
  const complete = { ...manifest, pieces: [manifest.pieces[0]], size: 5000 };
  assertEquals((await uploadManifest(server, serializeManifest(complete))).status, 200);
});

async function uploadManifest(server: TestServer, body: Uint8Array<ArrayBuffer>) {
  const cid = await cidOf(body);
  const response = await server.upload(cid, body, { contentType: MANIFEST_CONTENT_TYPE });
  const error = response.status === 200 ? { error: "", message: "" } : await errorOf(response);
  if (response.status === 200) await response.body?.cancel();
  return { status: response.status, error, cid };
}

/** The PieceCIDv2 of bytes, hashed here on the calling thread. */
async function cidOf(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return (await pieceCid(bytes, { pool: null })).cid;
}

async function usedToday(server: TestServer): Promise<number> {
  return (await (await server.get("/api/limits")).json()).usedTodayBytes;
}

/** GET /f/ whole: the head says 200 and the full length, the body breaks off before it. */
async function expectCutOff(server: StoreServer, result: UploadResult, piece: string) {
  const response = await server.get(`/f/${result.cid}`);
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-length"), String(FILE.length));
  let received = 0;
  let failed: unknown = null;
  try {
    for await (const chunk of response.body!) received += chunk.byteLength;
  } catch (error) {
    failed = error;
  }
  assertOk(failed !== null, `the body ended cleanly after ${received} bytes`);
  assertOk(received < FILE.length, `${received} bytes arrived`);
  const logged = server.logs.find((line) =>
    line.msg === "split file answer cut off: a piece failed mid-stream"
  );
  assertEquals([logged?.cid, logged?.piece], [result.cid, piece]);
  const metrics = await (await server.get("/metrics")).text();
  assertOk(metrics.includes(`storage_stream_aborts_total{route="/f/:cid"} 1`), "counted");
}

function markCorrupt(server: TestServer, cid: string): void {
  // As `main.ts scrub` marks a piece whose bytes fail (tests/ops/backup_scrub_test.ts runs it).
  const db = new DatabaseSync(`${server.dataDir}/storage.db`);
  try {
    db.prepare(
      "INSERT INTO corrupt_pieces (cid, marked_at, problem) VALUES (?, '2026-01-01T00:00:00Z', 'test')",
    ).run(cid);
  } finally {
    db.close();
  }
}

async function removeBehindTheServer(server: StoreServer, cid: string): Promise<void> {
  if (server.bucket === null) return await Deno.remove(piecePath(server, cid));
  const response = await signed(server.bucket, `/${server.bucket.bucket}/pieces/${cid}`, {
    method: "DELETE",
  });
  assertOk(response.ok, `DELETE answered ${response.status}`);
  await response.body?.cancel();
}

async function replaceBehindTheServer(
  server: StoreServer,
  cid: string,
  bytes: Uint8Array<ArrayBuffer>,
) {
  if (server.bucket === null) return await Deno.writeFile(piecePath(server, cid), bytes);
  await putObject(server.bucket, `pieces/${cid}`, bytes);
}

function piecePath(server: TestServer, cid: string): string {
  return `${server.dataDir}/pieces/${shardOf(cid)}/${cid}`;
}
