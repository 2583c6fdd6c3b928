/**
 * The page's cookie session as browsers meet it, in Chromium: signed in on
 * the service's page, a page of another origin of the same site (another
 * port of 127.0.0.1, so SameSite=Strict still sends the cookie) tries to use
 * the session. A change is refused (403 csrf_rejected, nothing stored or
 * charged) and a read cannot be seen (no CORS credentials). The page's own
 * sign-in, sign-up and wallet flows are in web_test.ts. Needs Debian's
 * chromium at /usr/bin/chromium (.ci/run installs it).
 */
import { assertEquals } from "../helpers/assert.ts";
import { serveStatic, withBrowser } from "../helpers/browser.ts";
import { bearer, signup, startTestServer } from "../helpers/server.ts";

const OTHER_PAGE = "<!doctype html><html lang=en><title>another origin</title><p>elsewhere</p>";

Deno.test("web session: a page of another origin cannot change anything through the session", async () => {
  await using server = await startTestServer();
  await using other = serveStatic({ "/": { body: OTHER_PAGE, type: "text/html; charset=utf-8" } });
  const { token } = await signup(server, { email: "session@example.org", label: "page" });
  const outcome = await withBrowser(async (page) => {
    // Signed in on the service's own page, as a person pasting the token.
    await page.goto(`${server.url}/`);
    await page.locator("body[data-ready]").waitFor();
    await page.getByLabel("Token", { exact: true }).fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#session-who", { hasText: "session@example.org" }).waitFor();

    await page.goto(`${other.url}/`);
    return await page.evaluate(async (api) => {
      // A change: a no-cors POST (what a form or a script can send anywhere), with the
      // cookie; and the same without it, which is an ordinary sponsored upload.
      const send = (cid: string, credentials: RequestCredentials) =>
        fetch(`${api}/api/upload?cid=${cid}`, {
          method: "POST",
          mode: "no-cors",
          credentials,
          headers: { "content-type": "text/plain" },
          body: `sent from another origin (${credentials})`,
        });
      await send("bafkcrossorigin1", "include");
      await send("bafkcrossorigin2", "omit");
      // A read with the cookie: the answer is not the page's to see.
      const read = await fetch(`${api}/api/files`, { credentials: "include" })
        .then((response) => `read ${response.status}`, (error: Error) => error.name);
      return { read };
    }, server.url);
  }, {
    // The refused read, as Chromium reports it.
    allowErrors: [/CORS policy/, /Failed to load resource/],
  });

  // With the cookie (same site: SameSite=Strict sends it) the upload was refused and nothing
  // stored; without it, the same request from that page is a sponsored upload like any other.
  const uploads = server.logs.filter((line) => line.route === "/api/upload");
  assertEquals(uploads.map((line) => line.status), [403, 200]);
  assertEquals((await server.get("/p/bafkcrossorigin1")).status, 404);
  assertEquals((await server.get("/p/bafkcrossorigin2")).status, 200);
  const usage = await server.get("/api/usage", { headers: bearer(token) });
  const days = (await usage.json()).days as { uploads: number }[];
  assertEquals(days.reduce((sum, day) => sum + day.uploads, 0), 0, "nothing charged");
  assertEquals(outcome.read, "TypeError");
});
