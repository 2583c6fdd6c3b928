/**
 * tus-js-client, the tus reference client (its Node build, in this process),
 * against the real server's /api/tus: it uploads, aborts, resumes from the
 * server's offset and finishes; terminates; fails at the last PATCH on a
 * wrong cid; resumes across a restart of the server; and starts anew when
 * its stored URL is gone. Nothing here is our own client.
 */
import type * as tus from "tus-js-client";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { partialFiles, storedPieces } from "../helpers/pieces.ts";
import { bearer, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { MemoryUrlStorage, tusMetadata, tusUpload } from "../helpers/tus_client.ts";
import { pieceCidOf, tusHead } from "../helpers/tus_requests.ts";
import { freePort } from "../../scripts/lib/ports.ts";

const CHUNK = 8 * MIB;
const FILE = seededBytes(3 * CHUNK + 12_345, 261);
const CID = pieceCidOf(FILE);

function optionsFor(server: TestServer, token: string | null, cid = CID): tus.UploadOptions {
  return {
    endpoint: `${server.url}/api/tus`,
    metadata: tusMetadata(cid, "report é.bin"),
    headers: token ? bearer(token) : {},
    chunkSize: CHUNK,
    uploadDataDuringCreation: true,
    urlStorage: new MemoryUrlStorage(),
    removeFingerprintOnSuccess: true,
  };
}

async function storedBytes(server: TestServer, cid: string): Promise<Uint8Array> {
  return new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer());
}

Deno.test("tus-js-client: an upload aborted halfway resumes from the server's offset and finishes", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const options = optionsFor(server, token);
  const first = await tusUpload(FILE, options, { abortAt: 0.5 });
  assertOk(first.aborted && first.url !== null);
  const { offset } = await tusHead(first.url, bearer(token));
  assertOk(offset !== null && offset >= CHUNK && offset < FILE.length, `offset ${offset}`);

  const second = await tusUpload(FILE, options, { resume: true });
  assertEquals([second.previous, second.url], [1, first.url], "the same upload, continued");
  // Only the missing bytes were sent: the progress started at the server's offset.
  assertOk(Math.min(...second.progress) >= offset!, `first progress ${second.progress[0]}`);
  assertEquals(second.lastResponse!.getHeader("X-Storage-Cid"), CID);
  assertMatch(second.lastResponse!.getHeader("X-Storage-Deal-Id") ?? "", /^stage-/);
  assertEquals(await storedBytes(server, CID), FILE);
  const result = await (await fetch(second.url!, { headers: bearer(token) })).json();
  assertEquals([result.cid, result.size, result.owner], [CID, FILE.length, "dev@example.org"]);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});

Deno.test("tus-js-client: a sponsored upload of a small file is one creation request", async () => {
  await using server = await startTestServer();
  const small = seededBytes(300_000, 5);
  const cid = pieceCidOf(small);
  const done = await tusUpload(small, optionsFor(server, null, cid));
  assertEquals(done.lastResponse!.getStatus(), 201, "the POST carried every byte");
  assertEquals(done.lastResponse!.getHeader("X-Storage-Cid"), cid);
  assertEquals(await storedBytes(server, cid), small);
});

Deno.test("tus-js-client: abort(true) terminates: the server keeps nothing and holds nothing", async () => {
  await using server = await startTestServer();
  const ended = await tusUpload(FILE, optionsFor(server, null), { abortAt: 0.4, terminate: true });
  assertOk(ended.url);
  assertEquals((await tusHead(ended.url)).status, 404);
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});

Deno.test("tus-js-client: a wrong cid fails at the last PATCH with 400 cid_mismatch, nothing kept", async () => {
  await using server = await startTestServer();
  const wrong = FILE.slice();
  wrong[FILE.length - 1] ^= 0xff;
  const failure = await tusUpload(wrong, optionsFor(server, null)).then(
    () => null,
    (error: tus.DetailedError) => error,
  );
  assertOk(failure, "the upload must fail");
  const response = failure.originalResponse!;
  assertEquals(response.getStatus(), 400);
  assertEquals(JSON.parse(response.getBody()).error, "cid_mismatch");
  assertEquals(failure.originalRequest!.getMethod(), "PATCH");
  assertEquals(await storedPieces(server.dataDir), []);
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals(await server.server.services.ledger.reservedTotal(), 0);
});

Deno.test("tus-js-client: the server restarts in the middle; the client resumes where it stood", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-tus-client-" });
  const port = String(freePort());
  const args = ["--port", port];
  try {
    const storage = new MemoryUrlStorage();
    let url: string;
    {
      await using first = await startTestServer({ dataDir, args });
      const aborted = await tusUpload(FILE, { ...optionsFor(first, null), urlStorage: storage }, {
        abortAt: 0.5,
      });
      url = aborted.url!;
    }
    await using second = await startTestServer({ dataDir, args });
    const resumed = await tusUpload(FILE, { ...optionsFor(second, null), urlStorage: storage }, {
      resume: true,
    });
    assertEquals(resumed.url, url);
    assertEquals(resumed.lastResponse!.getHeader("X-Storage-Cid"), CID);
    assertEquals(await storedBytes(second, CID), FILE);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("tus-js-client: a stored URL the server no longer knows starts a new upload", async () => {
  await using server = await startTestServer();
  const options = optionsFor(server, null);
  const first = await tusUpload(FILE, options, { abortAt: 0.6 });
  const end = await fetch(first.url!, { method: "DELETE", headers: { "tus-resumable": "1.0.0" } });
  assertEquals(end.status, 204);
  const again = await tusUpload(FILE, options, { resume: true });
  assertEquals(again.previous, 1);
  assertOk(again.url !== first.url, "a new upload");
  assertEquals(await storedBytes(server, CID), FILE);
});
