/**
 * Seeded property test over every route: random methods, paths, query strings,
 * headers and bodies. Whatever arrives, the answer is never a 500, every error
 * is the JSON shape of the contract, every answer is one the served
 * /openapi.json declares for its operation (status, error code, headers it
 * says are always sent), and the server keeps serving.
 * FUZZ_RUNS and FUZZ_SEED override the defaults (CI uses the defaults).
 */
import fc from "fast-check";
import { assertEquals, assertOk } from "./helpers/assert.ts";
import { signup, startTestServer } from "./helpers/server.ts";
import { ApiContract, errorCodeOf } from "./openapi_contract.ts";

const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? "400");
const SEED = Number(Deno.env.get("FUZZ_SEED") ?? "20261121");

const PATHS = [
  "/api/upload",
  "/p/bafkfuzzpiece01",
  "/p/",
  "/api/auth/signup",
  "/api/auth/signup/verify",
  "/api/tokens/revoke",
  "/api/tokens",
  "/api/files",
  "/api/usage",
  "/api/deals/stage-01m8041g3c7s7e0yz3rn1pxjnf/extend",
  "/api/deals//extend",
  "/api/limits",
  "/api/piece-cids",
  "/healthz",
  "/openapi.json",
  "/docs/deprecations",
  "/",
  "/nope",
];

const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "Bearer",
    "Bearer x.y.z",
    "pk_live_a.b.c",
    "text/plain",
    "a/b; c=d",
    "%ZZ",
    "../x",
  ),
).map((v) => v.replace(/[\r\n\0]/g, ""));

const requestArbitrary = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"),
  path: fc.oneof(
    fc.constantFrom(...PATHS),
    fc.constantFrom(...PATHS).chain((p) =>
      fc.string({ maxLength: 20 }).map((s) => p + encodeURIComponent(s))
    ),
    fc.webPath(),
  ),
  query: fc.dictionary(
    fc.constantFrom("cid", "token", "limit", "cursor", "from", "to", "size", "x"),
    fc.oneof(
      fc.string({ maxLength: 90 }),
      fc.constantFrom("bafkfuzzpiece01", "0", "-1", "2026-02-30"),
    ),
    { maxKeys: 3 },
  ),
  headers: fc.dictionary(
    fc.constantFrom(
      "authorization",
      "content-type",
      "x-filename",
      "x-forwarded-for",
      "if-none-match",
      "range",
    ),
    headerValue,
    { maxKeys: 4 },
  ),
  body: fc.oneof(
    fc.constant(null),
    fc.uint8Array({ maxLength: 2048 }),
    fc.json().map((j) => new TextEncoder().encode(j)),
    fc.record({
      email: fc.string(),
      label: fc.string(),
      scopes: fc.anything(),
      quotaMb: fc.anything(),
    })
      .map((o) => new TextEncoder().encode(JSON.stringify(o))),
  ),
  useToken: fc.boolean(),
});

Deno.test("fuzz: random requests to every route never get a 500, a non-JSON error or an undeclared answer", async () => {
  await using server = await startTestServer({ args: ["--signup-limit", "100000"] });
  const contract = await ApiContract.fetchFrom(server.url);
  const { token } = await signup(server);
  const seeded = await server.upload("bafkfuzzpiece01", "fuzz");
  await seeded.body?.cancel();
  let tried = 0;
  await fc.assert(
    fc.asyncProperty(requestArbitrary, async (r) => {
      tried++;
      const url = new URL(server.url + (r.path.startsWith("/") ? r.path : `/${r.path}`));
      for (const [k, v] of Object.entries(r.query)) url.searchParams.set(k, v);
      const headers = new Headers();
      for (const [k, v] of Object.entries(r.headers)) {
        try {
          headers.set(k, v);
        } catch { /* not a valid header value: fetch would refuse it anyway */ }
      }
      if (r.useToken && !headers.has("authorization")) {
        headers.set("authorization", `Bearer ${token}`);
      }
      const canHaveBody = r.method !== "GET" && r.method !== "HEAD";
      const response = await fetch(url, {
        method: r.method,
        headers,
        body: canHaveBody && r.body ? r.body : undefined,
      });
      const text = await response.text();
      const undeclared = contract.violation({
        method: r.method,
        pathname: url.pathname,
        status: response.status,
        code: errorCodeOf(text, response.headers),
        headers: response.headers,
      });
      assertEquals(undeclared, null, `${r.method} ${url}: ${text}`);
      assertOk(
        response.status < 500 || response.status === 503 || response.status === 507,
        `${r.method} ${url.pathname} -> ${response.status} ${text}`,
      );
      if (response.status >= 400 && r.method !== "HEAD") {
        assertEquals(
          response.headers.get("content-type"),
          "application/json",
          `${r.method} ${url}`,
        );
        const body = JSON.parse(text);
        assertEquals(typeof body.error, "string");
        assertEquals(typeof body.message, "string");
      }
      assertEquals(response.headers.get("access-control-allow-origin"), "*");
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  assertEquals(tried >= RUNS, true);
  const health = await server.get("/healthz");
  assertEquals(health.status, 200, "still serving");
  await health.body?.cancel();
  assertEquals(server.logs.filter((l) => l.msg === "unhandled error"), []);
});
