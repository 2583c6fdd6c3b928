/**
 * How the server serves the web page (the page's behaviour is tests/web/web_test.ts,
 * in Chromium): every file under a strict Content-Security-Policy with nosniff
 * and no framing, revalidated by ETag; unknown files are the JSON 404 of the
 * API; the hashing Worker's script is served from this origin; pieces keep
 * their own sandbox policy.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { errorOf, startTestServer } from "../helpers/server.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { pageCsp } from "../../src/http/service/web.ts";
import { hashWorkerSource } from "../../src/kernel/piece_cid/worker_source.ts";

const FILES = [
  { path: "/", type: /^text\/html; charset=utf-8$/ },
  { path: "/app/app.js", type: /^text\/javascript; charset=utf-8$/ },
  { path: "/app/app.css", type: /^text\/css; charset=utf-8$/ },
  { path: "/app/hash-worker.js", type: /^text\/javascript; charset=utf-8$/ },
];

Deno.test("web routes: every file of the page under a strict policy, revalidated by ETag", async () => {
  await using server = await startTestServer();
  const PAGE_CSP = pageCsp([server.url]);
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
  // The page's own files, not this origin: /p/ serves users' files from it.
  assertOk(PAGE_CSP.includes(`script-src ${server.url}/app/app.js 'wasm-unsafe-eval'`), PAGE_CSP);
  assertOk(PAGE_CSP.includes(`worker-src ${server.url}/app/hash-worker.js;`), PAGE_CSP);
  assertOk(PAGE_CSP.includes(`style-src ${server.url}/app/app.css;`), PAGE_CSP);
  assertOk(!/(script|worker|style)-src[^;]*'self'/.test(PAGE_CSP), PAGE_CSP);
});

Deno.test("web routes: the policy names the origin the browser used too, never an odd Host", async () => {
  await using server = await startTestServer();
  const port = Number(new URL(server.url).port);
  const get = (host: string) =>
    rawRequest(port, `GET / HTTP/1.1\nHost: ${host}\nConnection: close\n`).then((r) => r!);
  const policyFor = async (host: string) =>
    (await get(host)).headers.get("content-security-policy");
  assertEquals(
    await policyFor(`localhost:${port}`),
    pageCsp([server.url, `http://localhost:${port}`]),
  );
  for (const odd of [`a'b:${port}`, "a,b", "a;b"]) {
    assertEquals(await policyFor(odd), pageCsp([server.url]), odd);
  }
  // A Host no URL can be built from is the API's 400, not a 500.
  const unusable = await get("evil.example; script-src *");
  assertEquals([unusable.status, JSON.parse(unusable.body).error], [400, "invalid_request"]);
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
