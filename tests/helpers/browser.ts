/**
 * Browser tests: Debian's Chromium (/usr/bin/chromium; .ci/run installs it)
 * driven by playwright-core with the settings the bench uses too
 * (scripts/lib/chromium.ts), pages served by a small static server, browser
 * code bundled at test time with `deno bundle` (scripts/lib/bundle.ts).
 *
 * @example
 * await using site = serveStatic({ "/": { body: "<p>hi</p>", type: "text/html" } });
 * const text = await withBrowser(async (page) => {
 *   await page.goto(site.url);
 *   return await page.textContent("p");
 * });
 */
import type { BrowserContext, Page } from "playwright-core";
import { CHROMIUM_PATH, chromiumInstalled, launchChromium } from "../../scripts/lib/chromium.ts";
import { bundleForBrowser } from "../../scripts/lib/bundle.ts";

export { bundleForBrowser } from "../../scripts/lib/bundle.ts";
export { CHROMIUM_PATH };

export interface BrowserOptions {
  /**
   * Expected console errors: a line (as BrowserSession.console has it) matching a RegExp or
   * containing a string is not a failure.
   */
  allowErrors?: (RegExp | string)[];
  /** Limit for each Playwright action and evaluate (default 60 s). */
  timeoutMs?: number;
}

/** What withBrowser saw while the callback ran. */
export interface BrowserSession {
  page: Page;
  context: BrowserContext;
  /** Console messages of every type, pages' and workers': "type (worker …): text (at url)". */
  console: string[];
  /** Milliseconds Chromium took to start. */
  launchMs: number;
}

/**
 * Starts Chromium with a fresh profile (Playwright makes a temp user-data-dir
 * and removes it on close), opens one page, runs fn and closes the browser,
 * whatever happens. Fails if Chromium is not installed, and if the page or a
 * worker logged a console error or threw an uncaught error (unless allowed).
 */
export async function withBrowser<T>(
  fn: (page: Page, session: BrowserSession) => Promise<T>,
  options: BrowserOptions = {},
): Promise<T> {
  await requireChromium();
  const started = performance.now();
  const browser = await launchChromium({ timeoutMs: options.timeoutMs });
  const launchMs = performance.now() - started;
  const errors: string[] = [];
  const isAllowed = (line: string) =>
    options.allowErrors?.some((allowed) =>
      typeof allowed === "string" ? line.includes(allowed) : allowed.test(line)
    ) ?? false;
  try {
    const context = await browser.newContext();
    context.setDefaultTimeout(options.timeoutMs ?? 60_000);
    const lines: string[] = [];
    context.on("console", (message) => {
      const worker = message.worker();
      const where = worker ? ` (worker ${worker.url().slice(0, 40)})` : "";
      const at = message.location().url;
      const line = `${message.type()}${where}: ${message.text()}${at ? ` (at ${at})` : ""}`;
      lines.push(line);
      if (message.type() === "error" && !isAllowed(line)) errors.push(line);
    });
    context.on("weberror", (error) => {
      const line = `uncaught: ${error.error().stack ?? error.error().message}`;
      if (!isAllowed(line)) errors.push(line);
    });
    const page = await context.newPage();
    page.on("crash", () => errors.push("the page crashed"));
    const session = { page, context, console: lines, launchMs };
    let result: T;
    try {
      result = await fn(page, session);
    } catch (error) {
      if (errors.length === 0) throw error;
      throw new Error(`${error}\n${pageErrors(errors)}`, { cause: error });
    }
    if (errors.length > 0) throw new Error(pageErrors(errors));
    return result;
  } finally {
    await browser.close();
  }
}

function pageErrors(errors: string[]): string {
  return `the browser reported ${errors.length} error(s):\n  ${errors.join("\n  ")}`;
}

async function requireChromium(): Promise<void> {
  if (await chromiumInstalled()) return;
  throw new Error(
    `Chromium is not installed at ${CHROMIUM_PATH}: browser tests need Debian's chromium ` +
      "(apt-get install chromium; .ci/run installs it)",
  );
}

export interface StaticFile {
  body: string | Uint8Array<ArrayBuffer>;
  /** Content-Type, e.g. "text/html; charset=utf-8". */
  type: string;
}

export interface StaticServer extends AsyncDisposable {
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
}

/** Serves fixed files by path on 127.0.0.1, port 0 (a 404 for anything else). */
export function serveStatic(files: Record<string, StaticFile>): StaticServer {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const file = files[new URL(request.url).pathname];
    if (file === undefined || (request.method !== "GET" && request.method !== "HEAD")) {
      return new Response("not found", { status: 404 });
    }
    return new Response(request.method === "HEAD" ? null : file.body, {
      headers: { "content-type": file.type, "cache-control": "no-store" },
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/**
 * A page of its own that loads `script` (a page module, bundled for the
 * browser and served beside it as /<name>.js): what each browser test opens.
 */
export async function serveTestPage(
  { title, text, script }: { title: string; text: string; script: URL },
): Promise<StaticServer> {
  const served = `/${script.pathname.split("/").at(-1)!.replace(/\.ts$/, ".js")}`;
  const html = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>${title}</title>
    <link rel="icon" href="data:,">
    <script type="module" src="${served}"></script>
  </head>
  <body>
    <p>${text}</p>
  </body>
</html>
`;
  return serveStatic({
    "/": { body: html, type: "text/html; charset=utf-8" },
    [served]: { body: await bundleForBrowser(script), type: "text/javascript; charset=utf-8" },
  });
}
