/**
 * How the server serves the web page (the page's behaviour is tests/web/web_test.ts,
 * in Chromium): every file under a strict Content-Security-Policy with nosniff
 * and no framing, revalidated by ETag; unknown files are the JSON 404 of the
 * API; the hashing Worker's script is served from this origin; pieces keep
 * their own sandbox policy.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import { PAGE_CSP } from "../../src/http/web.ts";
import { hashWorkerSource } from "../../src/piece_cid/worker_source.ts";

const FILES = [
  { path: "/", type: /^text\/html; charset=utf-8$/ },
  { path: "/app/app.js", type: /^text\/javascript; charset=utf-8$/ },
  { path: "/app/app.css", type: /^text\/css; charset=utf-8$/ },
  { path: "/app/hash-worker.js", type: /^text\/javascript; charset=utf-8$/ },
];

Deno.test("web routes: every file of the page under a strict policy, revalidated by ETag", async () => {
  await using server = await startTestServer();
  for (const { path, type } of FILES) {
    const response = await server.get(path);
    const body = await response.text();
    assertEquals(response.status, 200, path);
    assertMatch(response.headers.get("content-type") ?? "", type, path);
    assertEquals(response.headers.get("content-security-policy"), PAGE_CSP, path);
    assertEquals(response.headers.get("x-content-type-options"), "nosniff", path);
    assertEquals(response.headers.get("x-frame-options"), "DENY", path);
    assertEquals(response.headers.get("cache-control"), "no-cache", path);
    assertOk(body.length > 0, path);
    const etag = response.headers.get("etag")!;
    const again = await server.get(path, { headers: { "if-none-match": etag } });
    assertEquals([again.status, await again.text()], [304, ""], path);
    const head = await server.get(path, { method: "HEAD" });
    assertEquals([head.status, await head.text()], [200, ""], path);
  }
  // The policy itself: nothing from elsewhere, no inline script, no framing; WASM allowed.
  for (const directive of ["default-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) {
    assertOk(PAGE_CSP.includes(directive), directive);
  }
  assertOk(!PAGE_CSP.includes("'unsafe-inline'") && !PAGE_CSP.includes("'unsafe-eval'"));
  assertOk(PAGE_CSP.includes("'wasm-unsafe-eval'"));
});

Deno.test("web routes: the page names only files of this origin, and the Worker is the SDK's", async () => {
  await using server = await startTestServer();
  const html = await (await server.get("/")).text();
  const references = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map(([, url]) => url);
  assertOk(references.length >= 2, html);
  for (const url of references) {
    assertOk(url.startsWith("/") || url.startsWith("data:"), `the page loads ${url}`);
  }
  assertOk(!/<script(?![^>]*\bsrc=)[^>]*>/.test(html), "an inline <script>");
  assertOk(!/\sstyle="/.test(html), "an inline style attribute");
  const worker = await (await server.get("/app/hash-worker.js")).text();
  assertEquals(worker, hashWorkerSource());
});

Deno.test("web routes: an unknown file is the API's JSON 404; pieces keep their sandbox", async () => {
  await using server = await startTestServer();
  const missing = await server.get("/app/nope.js");
  assertEquals([missing.status, (await errorOf(missing)).error], [404, "not_found"]);
  const stored = await server.upload("bafkwebhtml01", "<script>alert(1)</script>", {
    contentType: "text/html",
  });
  await stored.body?.cancel();
  const piece = await server.get("/p/bafkwebhtml01");
  await piece.body?.cancel();
  assertEquals(piece.headers.get("content-security-policy"), "sandbox");
});
