/**
 * Declared-codes scenarios (see scenario.ts) of what the server says of
 * itself: piece-cid forms, health, metrics, the web page, deprecations and
 * the API document.
 */
import { bearer, request, wrongMethod } from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** A GET of path sent again with the ETag of the first answer: 304. */
function revalidated(name: string, path: string): Scenario {
  return {
    name,
    send: async (p) => {
      const first = await fetch(`${p.server.url}${path}`);
      await first.body?.cancel();
      return p.send("GET", path, { headers: { "if-none-match": first.headers.get("etag")! } });
    },
    status: 304,
  };
}

/** What served() varies from one route to the next. */
interface Served {
  /** The method the route does not serve (405). Default POST. */
  wrong?: string;
  /** [name, path] of a GET sent again with the first answer's ETag (304). */
  again?: [string, string];
  /** [name, path] of the HEAD; default the GET's. */
  head?: [string, string];
  /** The route's own scenarios, after the GET's and before the wrong method's. */
  more?: Scenario[];
}

/**
 * A route that only serves, its GET and HEAD operations (ids `get` and
 * `head`): the GET (200), `again`, `more`, the wrong method (405); the HEAD (200).
 */
function served(
  get: string,
  head: string,
  [name, path]: [string, string],
  options: Served = {},
): Record<string, Scenario[]> {
  const [headName, headPath] = options.head ?? [name, path];
  return {
    [get]: [
      request(name, `GET ${path}`, "200"),
      ...(options.again
        ? [revalidated(`${options.again[0]} again, with its ETag`, options.again[1])]
        : []),
      ...options.more ?? [],
      wrongMethod(options.wrong ?? "POST", path),
    ],
    [head]: [request(headName, `HEAD ${headPath}`, "200")],
  };
}

/** The --metrics-token of the scenarios that protect /metrics. */
const METRICS_TOKEN = "metrics-scenario-token-01";

export const scenarios: Record<string, Scenario[]> = {
  ...served("describePieceCids", "headDescribePieceCids", ["the forms", "/api/piece-cids"], {
    wrong: "DELETE",
  }),
  ...served("getHealth", "headHealth", ["a healthy server", "/healthz"], {
    more: [
      request("no storage bound (degraded)", "GET /healthz", "503", { args: ["--data-dir", ""] }),
    ],
  }),
  getMetrics: [
    request("the metrics", "GET /metrics", "200"),
    request("the metrics, with the --metrics-token", "GET /metrics", "200", {
      args: ["--metrics-token", METRICS_TOKEN],
      headers: bearer(METRICS_TOKEN),
    }),
    request("no token, on a server with --metrics-token", "GET /metrics", "401 invalid_token", {
      args: ["--metrics-token", METRICS_TOKEN],
    }),
    request("another token than the --metrics-token", "GET /metrics", "401 invalid_token", {
      args: ["--metrics-token", METRICS_TOKEN],
      headers: bearer(`${METRICS_TOKEN}x`),
    }),
    request("metrics off", "GET /metrics", "404 not_found", { args: ["--metrics", "false"] }),
    wrongMethod("POST", "/metrics"),
  ],
  headMetrics: [request("the metrics", "HEAD /metrics", "200")],
  ...served("getWebPage", "headWebPage", ["the page", "/"], { again: ["the page", "/"] }),
  ...served("getWebAsset", "headWebAsset", ["the script", "/app/app.js"], {
    again: ["the Worker's script", "/app/hash-worker.js"],
    head: ["the style", "/app/app.css"],
    more: [request("a file the page does not have", "GET /app/nope.js", "404 not_found")],
  }),
  ...served("getFavicon", "headFavicon", ["the icon", "/favicon.ico"], {
    again: ["the icon", "/favicon.ico"],
  }),
  ...served("listDeprecations", "headListDeprecations", ["the list", "/docs/deprecations"]),
  ...served("getOpenApi", "headOpenApi", ["the document", "/openapi.json"], {
    more: [{
      name: "the document, with the deprecated ?token=",
      send: async (p) => p.send("GET", `/openapi.json?token=${await p.token()}`),
      status: 200,
    }],
  }),
};

export const outOfReach: OutOfReach = {};
