/**
 * The SDK's core runs in Chromium: a page on another origin than the storage
 * server (so CORS is real) loads the SDK bundled for the browser, computes the
 * PieceCIDv2 of a several-MiB Blob on hashing Workers, uploads the Blob
 * (sponsored) and downloads it back. Needs Debian's chromium at
 * /usr/bin/chromium (.ci/run installs it).
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, sha256Hex } from "../helpers/bytes.ts";
import { serveTestPage, withBrowser } from "../helpers/browser.ts";
import { patternBytes, startTestServer } from "../helpers/server.ts";
import { pieceCidOfStream } from "../../src/kernel/piece_cid/mod.ts";
import type { StorageTestPage } from "../fixtures/browser/sdk_page.ts";

const FIXTURES = new URL("../fixtures/browser/", import.meta.url);

/** Several whole segments (1,040,384 bytes each) for the Workers, and a partial one. */
const SIZE = 5 * MIB + 12_345;
const SEED = 3;
const WORKERS = 2;

/** The page's globalThis (page functions are serialised: they may use types only). */
type PageGlobal = { storageTest: StorageTestPage };

Deno.test("browser: the SDK in Chromium hashes a Blob on Workers, uploads it and downloads it", async () => {
  await using server = await startTestServer();
  await using site = await serveTestPage({
    title: "Storage SDK in a browser",
    text: "Storage SDK browser test page",
    script: new URL("sdk_page.ts", FIXTURES),
  });
  const bytes = patternBytes(SIZE, SEED);
  const expected = await pieceCidOfStream(ReadableStream.from([bytes]));

  const run = await withBrowser(async (page) => {
    const workers: string[] = [];
    page.on("worker", (worker) => workers.push(worker.url()));
    await page.goto(`${site.url}/`);
    await page.waitForFunction(() => "storageTest" in globalThis);
    const hashed = await page.evaluate(
      ([size, seed, workers]) =>
        (globalThis as unknown as PageGlobal).storageTest.pieceCid(size, seed, workers),
      [SIZE, SEED, WORKERS] as const,
    );
    const hashWorkers = workers.length;
    const uploaded = await page.evaluate(
      ([url, size, seed, workers]) =>
        (globalThis as unknown as PageGlobal).storageTest.upload(url, size, seed, workers),
      [server.url, SIZE, SEED, WORKERS] as const,
    );
    const uploadWorkers = workers.length - hashWorkers;
    const downloaded = await page.evaluate(
      ([url, cid]) => (globalThis as unknown as PageGlobal).storageTest.download(url, cid),
      [server.url, uploaded.cid] as const,
    );
    return { hashed, uploaded, downloaded, workers, hashWorkers, uploadWorkers };
  });

  // The standalone pieceCid ran on Workers (started from data: URLs) and agrees with Deno's.
  assertEquals(run.hashed.cid, expected.cid);
  assertEquals(run.hashed.size, SIZE);
  assertOk(run.hashWorkers > 0, "pieceCid started no hashing Worker in the page");
  assertOk(run.uploadWorkers > 0, "upload started no hashing Worker in the page");
  assertOk(run.workers.every((url) => url.startsWith("data:")), run.workers.join(", "));
  // The upload answered with that cid, and the server has exactly the bytes.
  assertEquals(run.uploaded.cid, expected.cid);
  assertEquals(run.uploaded.size, SIZE);
  assertEquals(run.uploaded.pieces, 1);
  assertEquals(run.uploaded.deals, 1);
  assertEquals(run.uploaded.retrievalUrl, `${server.url}/p/${expected.cid}`);
  assertEquals(run.uploaded.phases.at(-1), "done");
  const stored = await server.get(`/p/${expected.cid}`);
  assertEquals(stored.status, 200);
  assertEquals(new Uint8Array(await stored.arrayBuffer()), bytes);
  // The SDK's download in the page gave the same bytes back.
  assertEquals(run.downloaded.size, SIZE);
  assertEquals(run.downloaded.sha256, await sha256Hex(bytes));
});
