/**
 * A signed upload link used as browsers will: a page on another origin than
 * the storage server, holding no token, computes a file's cid with the SDK,
 * gets a link from its backend (here the test, which holds the token and
 * mints with StorageClient.createUploadLink), and uploads through it with
 * uploadThroughLink, cross-origin, without credentials. A second use is
 * refused (invalid_link). Needs Debian's chromium at /usr/bin/chromium.
 */
import { assertEquals } from "../helpers/assert.ts";
import { serveTestPage, withBrowser } from "../helpers/browser.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import { StorageClient } from "../../src/client/sdk/mod.ts";
import type { LinkTestPage } from "../fixtures/browser/link_page.ts";

const TEXT = "uploaded from another origin through a signed link\n";

Deno.test("browser: a page of another origin uploads through a link its backend minted", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "backend@example.org" });
  using backend = new StorageClient({ server: server.url, token });
  await using site = await serveTestPage({
    title: "Upload through a link",
    text: "A page that holds no token",
    script: new URL("../fixtures/browser/link_page.ts", import.meta.url),
  });
  const run = await withBrowser(async (page) => {
    await page.exposeFunction(
      "mintUploadLink",
      async (request: { cid: string; size: number; contentType: string }) =>
        (await backend.createUploadLink({ ...request, expiresInSeconds: 300 })).url,
    );
    await page.goto(`${site.url}/`);
    await page.waitForFunction(() => "linkTest" in globalThis);
    return await page.evaluate(
      ([text]) =>
        (globalThis as unknown as { linkTest: LinkTestPage }).linkTest.upload(text, "text/plain"),
      [TEXT] as const,
    );
  }, {
    // The second use on purpose: Chromium logs its 401.
    allowErrors: [
      /status of 401 \(Unauthorized\) \(at http:\/\/127\.0\.0\.1:\d+\/api\/upload-links\//,
    ],
  });
  const first = run.first as { cid: string; owner: string; size: number };
  assertEquals([first.owner, first.size], ["backend@example.org", TEXT.length]);
  assertEquals(run.second, "invalid_link");
  const stored = await server.get(`/p/${first.cid}`);
  assertEquals(await stored.text(), TEXT);
  assertEquals(stored.headers.get("content-type"), "text/plain");
});
