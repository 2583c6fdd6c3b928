/**
 * "Your files" in Chromium: a split file is one row (its name, its real
 * size, its /f/ link, its parts folded under it), each row says its state,
 * and Delete asks once more before it ends the deal (a split file's parts'
 * deals too). The files are stored through the SDK beforehand; the page
 * only lists and deletes them. And an upload from the page leaves the
 * console clean: its "already stored?" question is answered 200 yes or no.
 */
import { Buffer } from "node:buffer";
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { KIB } from "../helpers/bytes.ts";
import { withBrowser } from "../helpers/browser.ts";
import { patternBytes, signup, startTestServer } from "../helpers/server.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";

const SCREENSHOT_DIR = Deno.env.get("SCREENSHOT_DIR") ?? "screenshots";

Deno.test("web: Your files shows a split file as one file, and Delete ends it after a confirmation", async () => {
  await using server = await startTestServer({ args: ["--token-max-file-size", "64KiB"] });
  const { token, email } = await signup(server);
  using client = new StorageClient({ server: server.url, token });
  const notes = await client.upload(patternBytes(3000, 1), {
    filename: "notes.txt",
    contentType: "text/plain",
  });
  const split = await client.upload(patternBytes(150 * KIB, 2), { filename: "movie.bin" });
  assertEquals(split.pieces.length, 3);
  const manifestDeal = split.deals.at(-1)!;

  await withBrowser(async (page) => {
    await page.setViewportSize({ width: 1200, height: 800 });
    await page.goto(`${server.url}/`);
    await page.locator("body[data-ready]").waitFor();
    await page.getByLabel("Token", { exact: true }).fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#session-who", { hasText: email }).waitFor();

    const rows = page.locator("#files tbody > tr");
    const row = page.locator(`#files tr[data-deal="${manifestDeal}"]`);
    await row.waitFor();
    assertEquals(await rows.count(), 2, "two files: the split one is one row, its parts folded");
    const link = row.getByRole("link", { name: "movie.bin", exact: true });
    assertEquals(await link.getAttribute("href"), `${server.url}/f/${split.cid}`);
    const cells = row.locator(":scope > td");
    assertEquals(await cells.nth(1).innerText(), "150 KiB");
    assertEquals(await cells.nth(4).innerText(), "Active");
    assertMatch(await cells.nth(0).innerText(), /split file, 3 parts/);
    await row.getByText("3 parts", { exact: true }).click();
    const parts = row.locator("details.parts li");
    assertEquals(await parts.count(), 3);
    for (const [index, piece] of split.pieces.entries()) {
      assertMatch(
        await parts.nth(index).innerText(),
        new RegExp(`^movie\\.bin\\.part${index + 1}, `),
      );
      assertMatch(await parts.nth(index).innerText(), new RegExp(piece.cid));
    }
    await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
    await page.locator("#files").screenshot({ path: `${SCREENSHOT_DIR}/files-split.png` });

    // Delete asks first; Cancel changes nothing.
    await row.getByRole("button", { name: "Delete movie.bin" }).click();
    await row.getByRole("group", { name: "Delete movie.bin?" }).waitFor();
    await row.getByRole("button", { name: "Cancel" }).click();
    await row.getByRole("button", { name: "Delete movie.bin" }).waitFor();
    assertEquals((await client.deal(manifestDeal)).state, "active");

    await row.getByRole("button", { name: "Delete movie.bin" }).click();
    await row.getByRole("button", { name: "Yes, delete" }).click();
    await page.locator("#files-status", { hasText: "Deleted “movie.bin”" }).waitFor();
    await row.locator('td[data-state="deleted"]').waitFor();
    assertEquals(await row.getByRole("button").count(), 0, "nothing more to do with it");
    for (const dealId of split.deals) assertEquals((await client.deal(dealId)).state, "deleted");
    assertEquals((await client.deal(notes.deals[0])).state, "active");
  });
});

Deno.test("web: an upload from the page logs nothing in the console (no 404 of an 'already stored?' probe)", async () => {
  await using server = await startTestServer();
  await withBrowser(async (page) => {
    await page.goto(`${server.url}/`);
    await page.locator("body[data-ready]").waitFor();
    await page.locator("#file-input").setInputFiles([
      { name: "fresh.txt", mimeType: "text/plain", buffer: Buffer.from("a new piece\n") },
    ]);
    const item = page.locator(".upload-item", { hasText: "fresh.txt" });
    await item.locator(".upload-state", { hasText: "Stored" }).waitFor();
    // withBrowser fails the test on any console error: the probe answered 200 "not stored".
  });
  const probes = server.logs.filter((l) => l.msg === "request" && l.route === "/api/pieces/:cid");
  assertEquals(probes.length > 0, true, "the page asked whether the piece was stored");
});
