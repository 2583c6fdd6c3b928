/**
 * Uppy (its tus plugin, on tus-js-client's browser build) in Chromium, from a
 * page on another origin (so CORS is real), against the real server's
 * /api/tus: it uploads, pauses and resumes, survives the network going away,
 * continues after a reload from what the browser remembers, and terminates.
 * Every upload ends with the bytes stored under their cid.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { serveTestPage, withBrowser } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";
import type { Page } from "playwright-core";
import type { UppyTestPage } from "../fixtures/browser/uppy_page.ts";

const FIXTURES = new URL("../fixtures/browser/", import.meta.url);
const SIZE = 24 * MIB + 5;

type PageGlobal = { uppyTest: UppyTestPage };

/** The one upload's offset as the server records it (0 before it exists). */
function serverOffset(server: TestServer): number {
  const row = server.server.db.prepare("SELECT MAX(received) AS n FROM resumable_uploads")
    .get() as {
      n: number | null;
    };
  return Number(row.n ?? 0);
}

function uploadsCreated(server: TestServer): number {
  return Number(
    (server.server.db.prepare("SELECT COUNT(*) AS n FROM resumable_uploads").get() as { n: number })
      .n,
  );
}

/** A page of the Uppy bundle, set up with one file of SIZE bytes from `seed`; its cid. */
async function withUppy(
  seed: number,
  fn: (
    page: Page,
    context: { server: TestServer; cid: string; reload(): Promise<void>; console: string[] },
  ) => Promise<void>,
  options: { allowErrors?: string[]; stored?: boolean } = {},
) {
  await using server = await startTestServer();
  await using site = await serveTestPage({
    title: "Uppy against the storage service",
    text: "Uppy tus test page",
    script: new URL("uppy_page.ts", FIXTURES),
  });
  const cid = pieceCidOf(seededBytes(SIZE, seed));
  const setup = { endpoint: `${server.url}/api/tus`, size: SIZE, seed, cid };
  const reload = async (page: Page) => {
    await page.goto(`${site.url}/`);
    await page.waitForFunction(() => "uppyTest" in globalThis);
    await page.evaluate((s) => (globalThis as unknown as PageGlobal).uppyTest.setup(s), setup);
  };
  await withBrowser(async (page, session) => {
    await reload(page);
    await fn(page, { server, cid, reload: () => reload(page), console: session.console });
  }, { allowErrors: options.allowErrors });
  if (options.stored === false) return;
  assertEquals(
    new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer()),
    seededBytes(SIZE, seed),
  );
}

const upload = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as PageGlobal).uppyTest.upload());

Deno.test("uppy: pause at half, resume from the server's offset, finish", async () => {
  await withUppy(1, async (page, { server }) => {
    const done = upload(page);
    await eventually(() => serverOffset(server) >= SIZE / 2, "half on the server", {
      timeoutMs: 60_000,
    });
    const paused = await page.evaluate(() =>
      (globalThis as unknown as PageGlobal).uppyTest.pauseResume()
    );
    assertEquals(paused, true);
    await page.evaluate(() => (globalThis as unknown as PageGlobal).uppyTest.pauseResume());
    const result = await done;
    assertEquals([result.successful.length, result.failed], [1, []]);
    assertEquals(uploadsCreated(server), 1, "one upload, continued");
  });
});

Deno.test("uppy: the network goes away in the middle; the upload continues when it is back", async () => {
  await withUppy(2, async (page, { server, console }) => {
    const done = upload(page);
    await eventually(() => serverOffset(server) >= SIZE / 2, "half on the server", {
      timeoutMs: 60_000,
    });
    await page.context().setOffline(true);
    await eventually(
      () => console.some((line) => line.includes("ERR_INTERNET_DISCONNECTED")),
      "a request refused for want of a network",
      { timeoutMs: 30_000 },
    );
    await page.context().setOffline(false);
    const result = await done;
    assertEquals([result.successful.length, result.failed], [1, []]);
    assertEquals(uploadsCreated(server), 1);
  }, { allowErrors: ["ERR_INTERNET_DISCONNECTED"] });
});

Deno.test("uppy: a reload in the middle; the same file added again continues what the browser remembers", async () => {
  await withUppy(3, async (page, context) => {
    void upload(page).catch(() => {});
    await eventually(() => serverOffset(context.server) >= SIZE / 2, "half on the server", {
      timeoutMs: 60_000,
    });
    await context.reload();
    const remembered = await page.evaluate(() =>
      (globalThis as unknown as PageGlobal).uppyTest.rememberedUploads()
    );
    assertEquals(remembered.length, 1);
    const before = serverOffset(context.server);
    const result = await upload(page);
    assertEquals([result.successful.length, result.failed], [1, []]);
    assertEquals(uploadsCreated(context.server), 1, "no second upload was created");
    assertOk(before >= SIZE / 2);
  });
});

Deno.test("uppy: cancelAll terminates: the server keeps nothing and holds nothing", async () => {
  await withUppy(4, async (page, { server }) => {
    void upload(page).catch(() => {});
    await eventually(() => serverOffset(server) >= 8 * MIB, "some bytes on the server", {
      timeoutMs: 60_000,
    });
    // tus-js-client learns the upload's URL from the creation's answer, and only then can it
    // terminate: a cancel while that answer is on its way aborts the POST and sends no DELETE
    // (on a loaded machine the server had recorded the first chunk, the browser not yet read
    // the answer). The browser remembers the URL once it has it; wait for that.
    await eventually(
      async () =>
        (await page.evaluate(() =>
          (globalThis as unknown as PageGlobal).uppyTest.rememberedUploads()
        )).length === 1,
      "the browser knows the upload's URL",
      { timeoutMs: 30_000 },
    );
    await page.evaluate(() => (globalThis as unknown as PageGlobal).uppyTest.cancelAll());
    // The DELETE waits for the PATCH that Uppy aborted to let go of the upload.
    await eventually(() => uploadsCreated(server) === 0, "the upload terminated", {
      timeoutMs: 30_000,
    });
    assertEquals(await server.server.services.ledger.reservedTotal(), 0);
    assertEquals((await server.get(`/p/${pieceCidOf(seededBytes(SIZE, 4))}`)).status, 404);
  }, { stored: false });
});
