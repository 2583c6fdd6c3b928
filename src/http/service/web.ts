/**
 * GET / and GET /app/{file} — the web page: one HTML page, its stylesheet,
 * its script (built from src/client/web/app/ into src/client/web/assets.gen.ts, so a
 * compiled binary carries it) and the hashing Worker's script (the same code
 * the SDK starts from a data: URL elsewhere; the page's policy refuses data:
 * Workers). Nothing is fetched from anywhere else.
 *
 * Every answer carries a strict Content-Security-Policy: the page's own
 * script, stylesheet and Worker named by path (not this whole origin, which
 * serves users' files under /p/), requests only to this origin, no inline
 * script, WebAssembly allowed (the PieceCID kernel), no framing. Pieces under /p/ keep their own
 * `sandbox` policy, so a stored HTML file cannot reach the page's
 * sessionStorage, where the page keeps the token.
 */
import { createHash } from "node:crypto";
import { ApiError } from "../../kernel/errors.ts";
import { hashWorkerSource } from "../../kernel/piece_cid/worker_source.ts";
import { WEB_ASSETS } from "../../client/web/assets.gen.ts";
import type { Handler } from "../pipeline/router.ts";

/**
 * The page's policy for a page loaded from these origins. Scripts, styles
 * and the Worker are named file by file, never 'self': /p/ serves what users
 * uploaded from this same origin (JavaScript included), so 'self' would let
 * any injection into the page run an uploaded script or register it as a
 * Service Worker. img-src keeps blob: for previews of files picked on this
 * machine, media-src 'self' for the player that previews a stored video or
 * audio file (media runs no script).
 */
export function pageCsp(origins: readonly string[]): string {
  const files = (path: string) => origins.map((origin) => `${origin}${path}`).join(" ");
  return [
    "default-src 'self'",
    `script-src ${files("/app/app.js")} 'wasm-unsafe-eval'`,
    `worker-src ${files("/app/hash-worker.js")}`,
    "connect-src 'self'",
    "img-src 'self' blob: data:",
    "media-src 'self'",
    `style-src ${files("/app/app.css")}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A Host header that can go into a policy as it is (no ';', ',', space or quote can). */
const PLAIN_HOST = /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;

/**
 * Where the page's files are: the base URL's origin, and the origin this
 * request was sent to when the browser reached the server by another name
 * (localhost for 127.0.0.1, an address for a name). A source with scheme
 * http also matches https, so a proxy that ends TLS in front changes nothing.
 */
export function pageOrigins(baseUrl: string, requestUrl: URL): string[] {
  const origins = [new URL(baseUrl).origin];
  const requestOrigin = `${requestUrl.protocol}//${requestUrl.host}`;
  if (PLAIN_HOST.test(requestUrl.host) && !origins.includes(requestOrigin)) {
    origins.push(requestOrigin);
  }
  return origins;
}

interface Asset {
  type: string;
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

function assetOf(type: string, text: string): Asset {
  const body = new TextEncoder().encode(text);
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
  return { type, body, etag };
}

/** The files under /app/, by name. */
function appFiles(): Map<string, Asset> {
  const files = new Map<string, Asset>();
  for (const [name, { type, body }] of Object.entries(WEB_ASSETS)) {
    if (name !== "index.html") files.set(name, assetOf(type, body));
  }
  files.set("hash-worker.js", assetOf("text/javascript; charset=utf-8", hashWorkerSource()));
  return files;
}

export function createWebHandlers(
  baseUrl: string,
): { page: Handler; asset: Handler; favicon: Handler } {
  const page = assetOf(WEB_ASSETS["index.html"].type, WEB_ASSETS["index.html"].body);
  const files = appFiles();
  const favicon = files.get("favicon.svg")!;
  const policyFor = (url: URL) => pageCsp(pageOrigins(baseUrl, url));
  return {
    page: (request, context) => serve(request, page, policyFor(context.url)),
    // Browsers ask for /favicon.ico by themselves (a /p/ file opened in a tab, say).
    favicon: (request, context) => serve(request, favicon, policyFor(context.url)),
    asset: (request, context) => {
      const file = files.get(context.params.file);
      if (!file) throw new ApiError("not_found", "No such file of the web page");
      return serve(request, file, policyFor(context.url));
    },
  };
}

function serve(request: Request, asset: Asset, policy: string): Response {
  const headers = {
    "content-type": asset.type,
    "content-security-policy": policy,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    // Revalidated on every load (cheap: 304 by ETag), so a new build is seen at once.
    "cache-control": "no-cache",
    etag: asset.etag,
  };
  if (request.headers.get("if-none-match") === asset.etag) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(request.method === "HEAD" ? null : asset.body, { headers });
}
