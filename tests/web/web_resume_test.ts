/**
 * The web page's resumable uploads, in Chromium against the real server: a
 * file over a few MiB goes through /api/tus, a reload halfway leaves the page
 * offering to continue it (not while it is still being sent), and picking the
 * same file again sends only what the server lacks. And what a newcomer met on the page: one file picker, a
 * usage chart whose scale reads as two sizes when nothing was uploaded, and
 * an icon at /favicon.ico.
 */
import type { Page } from "playwright-core";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes } from "../helpers/bytes.ts";
import { withBrowser } from "../helpers/browser.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";

const SIZE = 26 * MIB + 17;

async function openPage(page: Page, server: TestServer): Promise<void> {
  await page.goto(`${server.url}/`);
  await page.locator("body[data-ready]").waitFor();
}

function serverOffset(server: TestServer): number {
  const row = server.server.db.prepare("SELECT MAX(received) AS n FROM resumable_uploads")
    .get() as { n: number | null };
  return Number(row.n ?? 0);
}

function uploadsCreated(server: TestServer): number {
  return server.logs.filter((line) =>
    line.msg === "request" && line.method === "POST" && line.route === "/api/tus"
  ).length;
}

Deno.test("web: a reload halfway; the page offers to continue, and the same file sends only the rest", async () => {
  await using server = await startTestServer();
  const bytes = seededBytes(SIZE, 61);
  const dir = await Deno.makeTempDir({ prefix: "web-resume-" });
  const path = `${dir}/holiday film.bin`;
  await Deno.writeFile(path, bytes);
  try {
    await withBrowser(async (page) => {
      await openPage(page, server);
      await page.locator("#file-input").setInputFiles(path);
      await eventually(() => serverOffset(server) >= 8 * MIB, "some bytes on the server", {
        timeoutMs: 60_000,
      });
      // Still being sent: in the list of uploads, not offered as "Not finished".
      assertEquals(await page.locator("#unfinished").isHidden(), true, "not unfinished while sent");
      await page.reload();
      await page.locator("body[data-ready]").waitFor();
      // The page remembers the unfinished upload and says how to continue it.
      const offered = page.locator("#unfinished .unfinished-item");
      assertEquals(await offered.count(), 1);
      assertOk((await offered.textContent())?.includes("holiday film.bin"));
      // Its two buttons stay on one line, however the sentence before them wraps.
      for (const width of [1200, 700, 420]) {
        await page.setViewportSize({ width, height: 800 });
        const [choose, forget] = await Promise.all(
          ["Choose it again", "Forget it"].map((name) =>
            offered.getByRole("button", { name }).boundingBox()
          ),
        );
        assertEquals(choose!.y, forget!.y, `one line at ${width} px`);
      }
      const atReload = serverOffset(server);
      const patches: number[] = [];
      page.on("request", (request) => {
        if (request.method() === "PATCH") {
          patches.push(Number(request.headers()["upload-offset"]));
        }
      });
      await page.locator("#file-input").setInputFiles(path);
      await page.locator(".upload-done").waitFor({ timeout: 120_000 });
      assertOk(patches.length > 0 && patches[0] >= atReload, `resumed at ${patches[0]}`);
      assertOk(patches[0] >= 8 * MIB, "not from the start");
      assertEquals(uploadsCreated(server), 1, "one upload on the server, continued");
      assertEquals(await page.locator("#unfinished").isHidden(), true, "forgotten once stored");
      const remembered = await page.evaluate(() =>
        Object.keys(localStorage).filter((key) => key.startsWith("storage."))
      );
      assertEquals(remembered, []);
    }, { allowErrors: ["ERR_"] });
    const cid = pieceCidOf(bytes);
    assertEquals(new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer()), bytes);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("web: one file picker, a usage scale of two sizes with nothing uploaded, an icon", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  await withBrowser(async (page) => {
    await openPage(page, server);
    // The drop zone is the picker (it opens the file dialog); no second control beside it.
    const pickers = await page.locator("input[type=file]:visible, #drop-zone").count();
    assertEquals(pickers, 1);
    await page.locator("#token-input").fill(token);
    await page.locator("#token-form button[type=submit]").click();
    await page.locator("#usage-card .usage-chart").waitFor();
    const scale = await page.locator("#usage-card text.scale").allTextContents();
    assertEquals(scale.length, 2);
    assertOk(scale[0] !== scale[1], `the grid lines read ${scale.join(" and ")}`);
  });
  const icon = await server.get("/favicon.ico");
  assertEquals([icon.status, icon.headers.get("content-type")], [200, "image/svg+xml"]);
  assertOk((await icon.text()).startsWith("<svg"));
});
