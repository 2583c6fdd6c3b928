/**
 * The web page (src/client/web/app/) in Chromium against the real server, which
 * serves it at / on 127.0.0.1 (same origin as the API, under the page's
 * strict Content-Security-Policy): sponsored and token uploads (the cid the
 * page shows is the server's, split files show the manifest's cid), sign-up
 * with the token shown once, files, tokens and usage, a refusal in words,
 * wallet sign-in, axe-core on every main screen, and a stored HTML piece that
 * finds no token (the page signs in with an HttpOnly cookie session and keeps
 * none in script reach). Every test fails
 * on a console error, an uncaught error or a CSP violation, except the ones
 * allowed below, each with its reason. Screenshots of the main screens go to
 * $SCREENSHOT_DIR (default ./screenshots, git-ignored). Needs Debian's
 * chromium at /usr/bin/chromium (.ci/run installs it).
 */
import { Buffer } from "node:buffer";
import axe from "axe-core";
import type { Locator, Page } from "playwright-core";
import { privateKeyToAccount } from "viem/accounts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { KIB, MIB } from "../helpers/bytes.ts";
import { withBrowser } from "../helpers/browser.ts";
import { bearer, jtiOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { deployTestUsdc, startAnvil, usdc } from "../helpers/anvil.ts";
import { startSmtpSink } from "../helpers/smtp_sink.ts";
import { devKey, walletArgs } from "../helpers/wallet.ts";
import { ERROR_SENTENCES } from "../../src/client/web/app/messages.ts";
import { MANIFEST_CONTENT_TYPE } from "../../src/client/sdk/mod.ts";

const SCREENSHOT_DIR = Deno.env.get("SCREENSHOT_DIR") ?? "screenshots";
const VIEWPORT = { width: 1200, height: 800 };

/**
 * Before sending a piece the SDK asks HEAD /p/{cid} whether it is stored
 * already (so an interrupted upload resumes); for a new piece the answer is
 * 404, which Chromium logs as a failed resource load. Expected, and only for
 * /p/ URLs.
 */
const PIECE_CHECK_404 =
  /status of 404 \(Not Found\) \(at http:\/\/127\.0\.0\.1:\d+\/p\/[a-z0-9]+\)$/;

/** The page's globalThis, as far as the tests read it (page functions may use types only). */
type PageGlobal = { cspViolations: string[] };

/** Opens the page at the server's / and waits until it has asked the server what it accepts. */
async function openPage(page: Page, server: TestServer): Promise<void> {
  await page.setViewportSize(VIEWPORT);
  // Runs before the page's own script (CDP, not subject to the page's policy): records every
  // Content-Security-Policy violation, which checkNoCspViolations() then asserts are none.
  await page.addInitScript(() => {
    const violations: string[] = [];
    (globalThis as unknown as PageGlobal).cspViolations = violations;
    addEventListener("securitypolicyviolation", (event) => {
      violations.push(`${event.violatedDirective}: ${event.blockedURI}`);
    });
  });
  const response = await page.goto(`${server.url}/`);
  assertMatch(
    response?.headers()["content-security-policy"] ?? "",
    /script-src http:\/\/127\.0\.0\.1:\d+\/app\/app\.js 'wasm-unsafe-eval'/,
  );
  await page.locator("body[data-ready]").waitFor();
}

async function checkNoCspViolations(page: Page): Promise<void> {
  const violations = await page.evaluate(() => (globalThis as unknown as PageGlobal).cspViolations);
  assertEquals(violations, [], "the page violated its Content-Security-Policy");
}

/** Runs axe-core on the page; fails on any serious or critical violation. */
async function checkAccessible(page: Page, screen: string): Promise<void> {
  // page.evaluate runs over CDP, which the page's policy (no inline script, no eval) does not
  // govern: axe runs in the page as served, policy and all (openPage checks it is there).
  if (!await page.evaluate(() => "axe" in globalThis)) await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const { violations } = await (globalThis as unknown as { axe: typeof axe }).axe.run(document, {
      resultTypes: ["violations"],
    });
    return violations.map(({ id, impact, nodes }) => ({
      id,
      impact,
      targets: nodes.map((node) => String(node.target)),
    }));
  });
  const serious = violations.filter(({ impact }) => impact === "serious" || impact === "critical");
  assertEquals(serious, [], `axe on the ${screen} screen`);
}

async function saveScreenshot(page: Page, name: string, fullPage = true): Promise<void> {
  await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png`, fullPage });
}

interface PickedFile {
  name: string;
  mimeType: string;
  bytes: Uint8Array<ArrayBuffer>;
}

/** Signs the page in by pasting a token, and waits until it says who is signed in. */
async function signInWithToken(page: Page, token: string, who: string): Promise<void> {
  await page.getByLabel("Token", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#session-who", { hasText: who }).waitFor();
}

/**
 * The page keeps no token where a script can read it: none in localStorage or
 * sessionStorage, and the session cookie is HttpOnly (document.cookie is
 * empty), __Host-, Secure and SameSite=Strict.
 */
async function assertNoTokenInScriptReach(page: Page, token: string): Promise<void> {
  const seen = await page.evaluate(() => ({
    stored: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    cookie: document.cookie,
  }));
  assertOk(!seen.stored.includes("pk_live_"), `a token in web storage: ${seen.stored}`);
  assertOk(!seen.stored.includes(token.slice(8, 40)), "the token in web storage");
  assertEquals(seen.cookie, "", "the session cookie is out of script reach");
  const cookies = await page.context().cookies();
  const session = cookies.find((cookie) => cookie.name === "__Host-storage_session");
  assertOk(session, `no session cookie: ${JSON.stringify(cookies)}`);
  assertEquals(
    [session.httpOnly, session.secure, session.sameSite, session.path],
    [true, true, "Strict", "/"],
  );
  assertOk(!session.value.includes(token.slice(8, 40)), "the cookie is not the token");
}

/** Hands files to the page's file input, as a person picking them does. */
async function pickFiles(page: Page, files: PickedFile[]): Promise<void> {
  await page.locator("#file-input").setInputFiles(
    files.map(({ name, mimeType, bytes }) => ({ name, mimeType, buffer: Buffer.from(bytes) })),
  );
}

/** The list entry of a file, once it is stored; its cid as the page shows it. */
async function storedCid(page: Page, name: string): Promise<{ item: Locator; cid: string }> {
  const item = page.locator(".upload-item", { hasText: name });
  await item.locator(".upload-state", { hasText: "Stored" }).waitFor();
  return {
    item,
    cid: await item.getByRole("textbox", { name: "Content id (cid)", exact: true }).inputValue(),
  };
}

async function serverPieceCid(
  server: TestServer,
  token: string,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<string> {
  const response = await fetch(`${server.url}/api/piece-cids`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/octet-stream" },
    body: bytes,
  });
  assertEquals(response.status, 200);
  return (await response.json()).cid;
}

const TEXT = "Hello from the web page test.\n<b>not bold</b> <script>not run</script>\n";

/** An image to preview: blue and amber squares (an SVG, shown through <img>, so no script runs). */
const PICTURE_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120">' +
  '<rect width="240" height="120" fill="#e8f0fe"/><rect x="20" y="20" width="80" height="80" ' +
  'fill="#0b57d0"/><circle cx="170" cy="60" r="40" fill="#f4b400"/></svg>';

Deno.test("web: a sponsored upload shows the server's piece cid, a working link and a preview", async () => {
  await using server = await startTestServer();
  const text = new TextEncoder().encode(TEXT.repeat(60));
  const image = new TextEncoder().encode(PICTURE_SVG);
  const { token } = await signup(server, { label: "piece-cids" });
  const expected = await serverPieceCid(server, token, text);

  await withBrowser(async (page, { context }) => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    const uploads: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/api/upload")) uploads.push(request.resourceType());
    });
    // Listening from the start: Playwright intercepts file choosers only once it listens.
    const chooserOpened = page.waitForEvent("filechooser");
    await openPage(page, server);
    await page.locator("#upload-tier", { hasText: "Without an account" }).waitFor();
    await checkAccessible(page, "upload (empty)");

    // Keyboard: the header link, then the drop zone; pressing it opens the file chooser.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assertEquals(await page.evaluate(() => document.activeElement?.id), "drop-zone");
    await page.keyboard.press("Enter");
    await (await chooserOpened).setFiles([
      { name: "hello.txt", mimeType: "text/plain", buffer: Buffer.from(text) },
      { name: "picture.svg", mimeType: "image/svg+xml", buffer: Buffer.from(image) },
    ]);

    const { item, cid } = await storedCid(page, "hello.txt");
    assertEquals(cid, expected);
    const url = await item.getByRole("textbox", { name: "Link to the file", exact: true })
      .inputValue();
    assertEquals(url, `${server.url}/p/${cid}`);
    // The preview is the text itself, never parsed as HTML.
    const preview = item.locator(".preview-text");
    assertEquals(await preview.locator("b, script").count(), 0);
    assertOk((await preview.textContent())?.startsWith(TEXT), "the text preview");
    await item.getByRole("button", { name: "Copy link to the file" }).click();
    await item.getByText("Copied.").waitFor();
    assertEquals(await page.evaluate(() => navigator.clipboard.readText()), url);

    const picture = await storedCid(page, "picture.svg");
    const img = picture.item.getByRole("img", { name: "Preview of picture.svg" });
    await img.waitFor();
    assertMatch(await img.getAttribute("src") ?? "", /^blob:/);
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>(".preview-image")].every((image) =>
        image.complete && image.naturalWidth > 0
      )
    );
    assertEquals(uploads, ["xhr", "xhr"], "uploads go through XHR, for send progress");
    await checkAccessible(page, "upload result");
    await saveScreenshot(page, "upload-result");
    // docs/web-page.png is this one: the top of the page with the results.
    await page.evaluate(() => scrollTo(0, 0));
    await page.mouse.move(0, 0);
    await saveScreenshot(page, "overview", false);
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });

  // The link the page showed gives the bytes back.
  const stored = await server.get(`/p/${expected}`);
  assertEquals(new Uint8Array(await stored.arrayBuffer()), text);
});

Deno.test("web: a file over the per-file cap is split and the page shows the manifest's cid", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "64KiB"] });
  const bytes = patternBytes(200 * KIB, 7);
  const cid = await withBrowser(async (page) => {
    await openPage(page, server);
    await pickFiles(page, [{ name: "big.bin", mimeType: "application/octet-stream", bytes }]);
    const { item, cid } = await storedCid(page, "big.bin");
    await item.getByText("sent as 4 pieces plus a small manifest").waitFor();
    await item.getByText("Stored as 4 pieces and a manifest").waitFor();
    // The link to share is the whole file's, /f/, not the manifest's /p/.
    const link = item.getByRole("textbox", { name: "Link to the file", exact: true });
    assertEquals(await link.inputValue(), `${server.url}/f/${cid}`);
    assertEquals(
      await item.getByRole("link", { name: "Open the link" }).getAttribute("href"),
      `${server.url}/f/${cid}`,
    );
    await checkNoCspViolations(page);
    return cid;
  }, { allowErrors: [PIECE_CHECK_404] });
  const whole = await server.get(`/f/${cid}`);
  assertEquals(new Uint8Array(await whole.arrayBuffer()), bytes);

  const answer = await server.get(`/p/${cid}`);
  assertEquals(answer.headers.get("content-type"), MANIFEST_CONTENT_TYPE);
  const manifest = await answer.json();
  assertEquals(manifest.format, "storage-manifest");
  assertEquals([manifest.name, manifest.size], ["big.bin", bytes.length]);
  assertEquals(manifest.pieces.map((piece: { size: number }) => piece.size), [
    64 * KIB,
    64 * KIB,
    64 * KIB,
    8 * KIB,
  ]);
  const pieces = await Promise.all(
    manifest.pieces.map(async (piece: { cid: string }) =>
      new Uint8Array(await (await server.get(`/p/${piece.cid}`)).arrayBuffer())
    ),
  );
  assertEquals(new Uint8Array(await new Blob(pieces).arrayBuffer()), bytes);
});

Deno.test("web: the sending bar moves while a piece is still on the wire", async () => {
  await using server = await startTestServer();
  const bytes = patternBytes(MIB, 9);
  await withBrowser(async (page, { context }) => {
    await openPage(page, server);
    // Chromium's own throttling: 1 MiB/s up, so sending the one piece takes about a second.
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: MIB,
    });
    await pickFiles(page, [{ name: "slow.bin", mimeType: "application/octet-stream", bytes }]);
    // One piece: the SDK's own count moves only when its answer is in, so a bar between
    // 0 and full comes from the bytes XHR reports on the wire.
    const sending = await page.waitForFunction(() => {
      const bar = document.querySelector<HTMLProgressElement>("progress[id^=send-]");
      return bar !== null && bar.value > 0 && bar.value < bar.max && bar.value;
    });
    assertOk(Number(await sending.jsonValue()) < bytes.length);
    const hashed = await page.locator("progress[id^=hash-]").evaluate((bar: HTMLProgressElement) =>
      bar.value === bar.max
    );
    assertOk(hashed, "hashing is complete before sending");
    await storedCid(page, "slow.bin");
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });
});

Deno.test("web: sign-up shows the token once, the tab stays signed in, files, extend and revoke work", async () => {
  // A token's files over 64 KiB are split: the files list links such a file by its /f/ URL.
  // --query-token off: the page never sends a token as ?token= (it sends none at all).
  await using server = await startTestServer({
    args: ["--token-max-file-size", "64KiB", "--query-token", "off"],
  });
  const email = "web@example.org";
  await withBrowser(async (page) => {
    await openPage(page, server);
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("Name for this token").fill("test browser");
    await page.getByRole("button", { name: "Create token" }).click();

    const shown = page.getByRole("textbox", { name: "Your new token", exact: true });
    const token = await shown.inputValue();
    assertMatch(token, /^pk_live_/);
    await page.getByText("it will not be shown again").waitFor();
    await page.locator("#session-who", { hasText: email }).waitFor();
    await assertNoTokenInScriptReach(page, token);
    await checkAccessible(page, "new token");
    await saveScreenshot(page, "new-token", false);

    await pickFiles(page, [
      { name: "notes.txt", mimeType: "text/plain", bytes: new TextEncoder().encode(TEXT) },
    ]);
    const { cid } = await storedCid(page, "notes.txt");
    const row = page.locator("#files tbody tr", { hasText: "notes.txt" });
    await row.waitFor();
    assertOk((await row.textContent())?.includes(cid), "the files list shows the cid");
    await pickFiles(page, [
      {
        name: "movie.bin",
        mimeType: "application/octet-stream",
        bytes: patternBytes(150 * KIB, 3),
      },
    ]);
    const split = await storedCid(page, "movie.bin");
    const manifestRow = page.locator("#files tbody tr", { hasText: "(split file, 3 parts)" });
    await manifestRow.waitFor();
    const fileLink = manifestRow.getByRole("link", { name: "movie.bin", exact: true });
    assertEquals(await fileLink.getAttribute("href"), `${server.url}/f/${split.cid}`);

    // Reload: still signed in (the cookie session), the token is not shown again.
    await page.reload();
    await page.locator("body[data-ready]").waitFor();
    await page.locator("#session-who", { hasText: email }).waitFor();
    await row.waitFor();
    assertEquals(await page.locator("#new-token-value").count(), 0);
    assertEquals(await page.getByText(token).count(), 0);

    // Extend (the token has the pin scope): the term grows by one, said in words.
    const before = await row.locator("td").nth(3).textContent();
    await row.getByRole("button", { name: "Extend notes.txt" }).click();
    await page.locator("#files-status", { hasText: "notes.txt is now kept until" }).waitFor();
    assertOk(before !== await row.locator("td").nth(3).textContent(), "the new end is shown");
    await checkAccessible(page, "account with files");
    await saveScreenshot(page, "account-files");

    // A second token of the same user, revoked from the page.
    const second = await signup(server, { email, label: "laptop" });
    await page.reload();
    const secondRow = page.locator(`#tokens tr[data-jti="${jtiOf(second.token)}"]`);
    await secondRow.getByRole("button", { name: "Revoke laptop" }).click();
    await checkAccessible(page, "tokens (confirming a revoke)");
    await saveScreenshot(page, "tokens");
    await secondRow.getByRole("button", { name: "Yes, revoke" }).click();
    await page.locator("#tokens-status", { hasText: "Revoked “laptop”" }).waitFor();
    await secondRow.getByText("Revoked").waitFor();
    const refused = await fetch(`${server.url}/api/files`, { headers: bearer(second.token) });
    assertEquals([refused.status, (await refused.json()).error], [401, "revoked_token"]);

    // Revoking the tab's own token signs it out.
    const own = page.locator(`#tokens tr[data-jti="${jtiOf(token)}"]`);
    await own.getByRole("button", { name: "Revoke test browser" }).click();
    await own.getByRole("button", { name: "Revoke and sign out" }).click();
    await page.getByText("You revoked the token this tab used").waitFor();
    await page.locator("#session-who", { hasText: "Not signed in" }).waitFor();
    await page.reload();
    await page.locator("body[data-ready]").waitFor();
    await page.locator("#session-who", { hasText: "Not signed in" }).waitFor();
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });
});

Deno.test("web: on a server in verify mode, the mailed code gets the token", async () => {
  await using sink = startSmtpSink();
  await using server = await startTestServer({
    args: ["--signup", "verify", "--smtp-url", sink.url, "--mail-from", "storage@example.org"],
  });
  await withBrowser(async (page) => {
    await openPage(page, server);
    await page.getByLabel("E-mail address").fill("mailed@example.org");
    await page.getByRole("button", { name: "Create token" }).click();
    await page.getByText("We sent a code to mailed@example.org").waitFor();
    const code = /is (\d{8})\./.exec((await sink.nextMessage()).data.replace(/=\r\n/g, ""))![1];

    const wrong = code === "00000000" ? "11111111" : "00000000";
    await page.getByLabel("Code from the e-mail").fill(wrong);
    await page.getByRole("button", { name: "Get my token" }).click();
    await page.locator("#account-message", { hasText: "That code is wrong" }).waitFor();
    await page.getByLabel("Code from the e-mail").fill(code);
    await page.getByRole("button", { name: "Get my token" }).click();
    const token = await page.getByRole("textbox", { name: "Your new token", exact: true })
      .inputValue();
    assertMatch(token, /^pk_live_/);
    await page.locator("#session-who", { hasText: "mailed@example.org" }).waitFor();
    await checkNoCspViolations(page);
  }, {
    // The wrong code on purpose: 400 invalid_code, which the page puts in words.
    allowErrors: [
      /status of 400 \(Bad Request\) \(at http:\/\/127\.0\.0\.1:\d+\/api\/auth\/signup\/verify\)$/,
    ],
  });
});

Deno.test("web: a pasted token uploads, files page by cursor, the usage chart has today's bar", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "usage@example.org", label: "pasted" });
  // 20 earlier uploads of 10 bytes: with the page's, one more than a page of the files list.
  for (let i = 10; i < 30; i++) {
    const earlier = await server.upload(`earlier00${i}`, `earlier ${i}`, {
      headers: bearer(token),
      filename: `earlier-${i}.txt`,
      contentType: "text/plain",
    });
    assertEquals(earlier.status, 200);
    await earlier.body?.cancel();
  }
  await withBrowser(async (page) => {
    await openPage(page, server);
    await signInWithToken(page, token, "usage@example.org");
    await page.locator("#upload-tier", { hasText: "With your token" }).waitFor();

    // Dropped on the drop zone this time.
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(["x".repeat(3000)], "dropped.txt", { type: "text/plain" }));
      return transfer;
    });
    await page.locator("#drop-zone").dispatchEvent("drop", { dataTransfer: dropped });
    await storedCid(page, "dropped.txt");
    const rows = page.locator("#files tbody tr");
    await rows.first().filter({ hasText: "dropped.txt" }).waitFor();
    assertEquals(await rows.count(), 20);
    await page.getByRole("button", { name: "Show more files" }).click();
    await rows.nth(20).filter({ hasText: "earlier-10.txt" }).waitFor();
    assertOk(await page.locator("#files-more").isHidden(), "no third page");

    const today = new Date().toISOString().slice(0, 10);
    const bar = page.locator(`.usage-chart g[data-date="${today}"] rect:not([data-bytes="0"])`);
    await bar.waitFor();
    assertOk(Number(await bar.getAttribute("height")) > 0, "today's bar has a height");
    assertMatch(
      await bar.locator("..").getAttribute("aria-label") ?? "",
      /3\.1 KiB in 21 uploads$/,
    );
    assertEquals(await page.locator(".usage-chart [role=listitem]").count(), 30);
    assertEquals(await page.locator("#quota-meter").getAttribute("value"), "3200");
    await checkAccessible(page, "usage");
    await page.locator("#usage-card").scrollIntoViewIfNeeded();
    await saveScreenshot(page, "usage", false);
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });
});

Deno.test("web: an upload over today's cap is refused in words, before a byte is sent", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "1KiB"] });
  await withBrowser(async (page) => {
    const uploads: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/api/upload")) uploads.push(request.url());
    });
    await openPage(page, server);
    await pickFiles(page, [
      { name: "first.bin", mimeType: "application/octet-stream", bytes: patternBytes(600, 1) },
      { name: "second.bin", mimeType: "application/octet-stream", bytes: patternBytes(600, 2) },
    ]);
    await storedCid(page, "first.bin");
    const state = page.locator(".upload-item", { hasText: "second.bin" }).locator(".error");
    await state.waitFor();
    const words = await state.textContent() ?? "";
    assertMatch(
      words,
      /^Not sent: this file is 600 B, but only 424 B is left today of the daily allowance for uploads without an account from your network address \(1 KiB\)\. It renews at .+ \(in \d.*\)\. With a token you can upload more\.$/,
    );
    assertOk(!/rate_limited|quota_exceeded|_/.test(words), words);
    await page.locator("#upload-status", { hasText: "second.bin was not sent" }).waitFor();
    assertEquals(uploads.length, 1, "only the first file was sent");
    await checkAccessible(page, "refused upload");
    await saveScreenshot(page, "refused-upload", false);
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });
});

Deno.test("web: a stored HTML piece runs no script, and there is no token for one to read", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "victim@example.org", label: "victim" });
  const html = "<!doctype html><title>stored page</title><script>" +
    "document.title = 'stolen:' + document.cookie;" +
    "fetch('/api/leak?cookie=' + document.cookie, { method: 'POST' });" +
    "</script><p>a stored page</p>";
  const stored = await server.upload("webhtmlprobe01", html, { contentType: "text/html" });
  assertEquals(stored.status, 200);
  await withBrowser(async (page, session) => {
    const leaks: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/api/leak")) leaks.push(request.url());
    });
    await openPage(page, server);
    await signInWithToken(page, token, "victim@example.org");
    await assertNoTokenInScriptReach(page, token);

    // Same tab, same origin: without the piece's sandbox policy its script would run here.
    await page.goto(`${server.url}/p/webhtmlprobe01`);
    await page.getByText("a stored page").waitFor();
    assertEquals(await page.title(), "stored page", "the stored page's script did not run");
    assertEquals(await page.evaluate(() => self.origin), "null", "an opaque origin");
    assertMatch(
      await page.evaluate(() => {
        try {
          return `read: ${document.cookie}`;
        } catch (error) {
          return (error as Error).name;
        }
      }),
      /^SecurityError$/,
    );
    assertOk(
      session.console.some((line) => /Blocked script execution .*sandboxed/.test(line)),
      session.console.join("\n"),
    );
    assertEquals(leaks, []);

    // Back on the page, still signed in: the session was there to be misused, and was not.
    await page.goBack();
    await page.locator("#session-who", { hasText: "victim@example.org" }).waitFor();
    await checkNoCspViolations(page);
  }, {
    // The proof itself: Chromium refuses the stored page's script and says so on the console.
    allowErrors: [/Blocked script execution in 'http:\/\/127\.0\.0\.1:\d+\/p\/webhtmlprobe01'/],
  });
});

Deno.test("web: the page runs no uploaded script, as a script or as a Service Worker", async () => {
  await using server = await startTestServer();
  // An uploaded script: same origin as the page, served as JavaScript (with nosniff).
  const code = "document.title = 'uploaded code ran';";
  const stored = await server.upload("webjsprobe0001", code, { contentType: "text/javascript" });
  assertEquals(stored.status, 200);
  await withBrowser(async (page) => {
    await openPage(page, server);
    // What an injection into the page would do next (page.evaluate itself is not under the policy).
    const outcome = await page.evaluate(async () => {
      const script = document.createElement("script");
      script.src = "/p/webjsprobe0001";
      const loaded = new Promise<string>((resolve) => {
        script.onload = () => resolve("loaded");
        script.onerror = () => resolve("refused");
      });
      document.head.append(script);
      const worker = await navigator.serviceWorker.register("/p/webjsprobe0001")
        .then(() => "registered", (error: Error) => error.name);
      return { script: await loaded, worker, title: document.title };
    });
    assertEquals(outcome.script, "refused");
    assertEquals(outcome.worker, "SecurityError");
    assertOk(outcome.title !== "uploaded code ran", outcome.title);
    const violations = await page.evaluate(() =>
      (globalThis as unknown as PageGlobal).cspViolations
    );
    assertOk(
      violations.some((v) => /^script-src-elem: .*\/p\/webjsprobe0001$/.test(v)),
      violations.join(),
    );
    assertOk(
      violations.some((v) => /^worker-src: .*\/p\/webjsprobe0001$/.test(v)),
      violations.join(),
    );
  }, {
    // The proof itself: Chromium refuses both loads and says so on the console.
    allowErrors: [/Content Security Policy/, /webjsprobe0001/],
  });
});

Deno.test("web: wallet sign-in is offered with a wallet tier and a browser wallet, and signs in", async () => {
  // A real chain (anvil with the Test USD Coin), as tests/auth/wallet_test.ts has it: 2 USDC at
  // 1 KiB per USDC is a daily cap of 2 KiB.
  await using anvil = await startAnvil();
  const usdcToken = await deployTestUsdc(anvil);
  const account = privateKeyToAccount(devKey(1));
  await usdcToken.mint(account.address, usdc(2));
  await using server = await startTestServer({
    args: walletArgs(anvil.rpcUrl, usdcToken.address, ["--wallet-bytes-per-usdc", "1KiB"]),
  });
  await using plain = await startTestServer();
  await withBrowser(async (page) => {
    // A stand-in for a wallet extension (EIP-1193), signing with anvil's dev key in Deno.
    await page.exposeFunction("testWalletSign", (hex: string) => {
      const message = new TextDecoder().decode(Uint8Array.fromHex(hex.slice(2)));
      return account.signMessage({ message });
    });
    await page.addInitScript((address) => {
      const sign = (globalThis as unknown as { testWalletSign(hex: string): Promise<string> })
        .testWalletSign;
      (globalThis as unknown as { ethereum: unknown }).ethereum = {
        request({ method, params }: { method: string; params?: string[] }) {
          if (method === "eth_requestAccounts") return Promise.resolve([address]);
          if (method === "personal_sign") return sign(params![0]);
          return Promise.reject(new Error(`unexpected ${method}`));
        },
      };
    }, account.address);
    // A server without a wallet tier: no wallet sign-in, browser wallet or not.
    await openPage(page, plain);
    assertOk(await page.locator("#wallet-panel").isHidden(), "no wallet tier, no wallet sign-in");

    await page.goto(`${server.url}/`);
    await page.locator("body[data-ready]").waitFor();
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.locator("#session-who", { hasText: account.address }).waitFor();
    await page.locator("#upload-tier", { hasText: "With your wallet" }).waitFor();
    await pickFiles(page, [{
      name: "w.bin",
      mimeType: "application/octet-stream",
      bytes: patternBytes(KIB),
    }]);
    await storedCid(page, "w.bin");
    await page.locator("#files tbody tr", { hasText: "w.bin" }).waitFor();
    await page.locator("#quota-words", { hasText: "1 KiB of 2 KiB used today" }).waitFor();
    await checkNoCspViolations(page);
  }, { allowErrors: [PIECE_CHECK_404] });
});

Deno.test("web: every error code of docs/api.md has a sentence for people", async () => {
  const api = await Deno.readTextFile(new URL("../../docs/api.md", import.meta.url));
  const table = api.slice(api.indexOf("### Error codes"), api.indexOf("## Endpoints"));
  const codes = [...table.matchAll(/^\| \d{3} +\| `([a-z_]+)`/gm)].map(([, code]) => code);
  assertOk(codes.length >= 30, `found ${codes.length} codes in docs/api.md`);
  assertEquals(codes.filter((code) => !(code in ERROR_SENTENCES)), []);
  assertEquals(Object.keys(ERROR_SENTENCES).filter((code) => !codes.includes(code)), []);
  for (const sentence of Object.values(ERROR_SENTENCES)) {
    assertOk(!/\b[a-z]+_[a-z_]+\b/.test(sentence), `a raw code in: ${sentence}`);
  }
});
