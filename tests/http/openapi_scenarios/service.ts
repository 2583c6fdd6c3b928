/**
 * Declared-codes scenarios (see scenario.ts) of what the server says of
 * itself: piece-cid forms, health, metrics, the web page, deprecations and
 * the API document.
 */
import type { Answer, Probe } from "../openapi_probe.ts";
import { bearer, wrongMethod } from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** A GET of path sent again with the ETag of the first answer. */
async function revalidated(p: Probe, path: string): Promise<Answer> {
  const first = await fetch(`${p.server.url}${path}`);
  await first.body?.cancel();
  return p.send("GET", path, { headers: { "if-none-match": first.headers.get("etag")! } });
}

/** The --metrics-token of the scenarios that protect /metrics. */
const METRICS_TOKEN = "metrics-scenario-token-01";

export const scenarios: Record<string, Scenario[]> = {
  describePieceCids: [
    { name: "the forms", send: (p) => p.send("GET", "/api/piece-cids"), status: 200 },
    wrongMethod("DELETE", "/api/piece-cids"),
  ],
  headDescribePieceCids: [
    { name: "the forms", send: (p) => p.send("HEAD", "/api/piece-cids"), status: 200 },
  ],
  getHealth: [
    { name: "a healthy server", send: (p) => p.send("GET", "/healthz"), status: 200 },
    {
      name: "no storage bound (degraded)",
      args: ["--data-dir", ""],
      send: (p) => p.send("GET", "/healthz"),
      status: 503,
    },
    wrongMethod("POST", "/healthz"),
  ],
  headHealth: [{ name: "a healthy server", send: (p) => p.send("HEAD", "/healthz"), status: 200 }],
  getMetrics: [
    { name: "the metrics", send: (p) => p.send("GET", "/metrics"), status: 200 },
    {
      name: "the metrics, with the --metrics-token",
      args: ["--metrics-token", METRICS_TOKEN],
      send: (p) => p.send("GET", "/metrics", { headers: bearer(METRICS_TOKEN) }),
      status: 200,
    },
    {
      name: "no token, on a server with --metrics-token",
      args: ["--metrics-token", METRICS_TOKEN],
      send: (p) => p.send("GET", "/metrics"),
      status: 401,
      code: "invalid_token",
    },
    {
      name: "another token than the --metrics-token",
      args: ["--metrics-token", METRICS_TOKEN],
      send: (p) => p.send("GET", "/metrics", { headers: bearer(`${METRICS_TOKEN}x`) }),
      status: 401,
      code: "invalid_token",
    },
    {
      name: "metrics off",
      args: ["--metrics", "false"],
      send: (p) => p.send("GET", "/metrics"),
      status: 404,
      code: "not_found",
    },
    wrongMethod("POST", "/metrics"),
  ],
  headMetrics: [{ name: "the metrics", send: (p) => p.send("HEAD", "/metrics"), status: 200 }],
  getWebPage: [
    { name: "the page", send: (p) => p.send("GET", "/"), status: 200 },
    {
      name: "the page again, with its ETag",
      send: (p) => revalidated(p, "/"),
      status: 304,
    },
    wrongMethod("POST", "/"),
  ],
  headWebPage: [{ name: "the page", send: (p) => p.send("HEAD", "/"), status: 200 }],
  getWebAsset: [
    { name: "the script", send: (p) => p.send("GET", "/app/app.js"), status: 200 },
    {
      name: "the Worker's script again, with its ETag",
      send: (p) => revalidated(p, "/app/hash-worker.js"),
      status: 304,
    },
    {
      name: "a file the page does not have",
      send: (p) => p.send("GET", "/app/nope.js"),
      status: 404,
      code: "not_found",
    },
    wrongMethod("POST", "/app/app.js"),
  ],
  headWebAsset: [{ name: "the style", send: (p) => p.send("HEAD", "/app/app.css"), status: 200 }],
  getFavicon: [
    { name: "the icon", send: (p) => p.send("GET", "/favicon.ico"), status: 200 },
    {
      name: "the icon again, with its ETag",
      send: (p) => revalidated(p, "/favicon.ico"),
      status: 304,
    },
    wrongMethod("POST", "/favicon.ico"),
  ],
  headFavicon: [{ name: "the icon", send: (p) => p.send("HEAD", "/favicon.ico"), status: 200 }],
  listDeprecations: [
    { name: "the list", send: (p) => p.send("GET", "/docs/deprecations"), status: 200 },
    wrongMethod("POST", "/docs/deprecations"),
  ],
  headListDeprecations: [
    { name: "the list", send: (p) => p.send("HEAD", "/docs/deprecations"), status: 200 },
  ],
  getOpenApi: [
    { name: "the document", send: (p) => p.send("GET", "/openapi.json"), status: 200 },
    {
      name: "the document, with the deprecated ?token=",
      send: async (p) => p.send("GET", `/openapi.json?token=${await p.token()}`),
      status: 200,
    },
    wrongMethod("POST", "/openapi.json"),
  ],
  headOpenApi: [{
    name: "the document",
    send: (p) => p.send("HEAD", "/openapi.json"),
    status: 200,
  }],
};

export const outOfReach: OutOfReach = {};
