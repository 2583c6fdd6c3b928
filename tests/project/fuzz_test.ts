/**
 * Seeded property test over every route: random methods, paths, query strings,
 * headers and bodies. Whatever arrives, the answer is never a 500, every error
 * is the JSON shape of the contract, every answer is one the served
 * /openapi.json declares for its operation (status, error code, headers it
 * says are always sent), and the server keeps serving.
 * FUZZ_RUNS and FUZZ_SEED override the defaults (CI uses the defaults).
 */
import fc from "fast-check";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { signup, startTestServer } from "../helpers/server.ts";
import { ApiContract, errorCodeOf } from "../http/openapi_contract.ts";
import { deadRpcUrl, devKey, postSignIn, signedMessage, walletArgs } from "../helpers/wallet.ts";
import type { TestServer } from "../helpers/server.ts";

const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? "400");
const SEED = Number(Deno.env.get("FUZZ_SEED") ?? "20261121");

const PATHS = [
  "/api/upload",
  "/p/bafkfuzzpiece01",
  "/p/",
  "/api/auth/signup",
  "/api/auth/signup/verify",
  "/api/auth/wallet/nonce",
  "/api/auth/wallet",
  "/api/tokens/revoke",
  "/api/tokens",
  "/api/files",
  "/api/usage",
  "/api/deals/stage-01m8041g3c7s7e0yz3rn1pxjnf/extend",
  "/api/deals//extend",
  "/api/limits",
  "/api/piece-cids",
  "/healthz",
  "/metrics",
  "/openapi.json",
  "/docs/deprecations",
  "/",
  "/app/app.js",
  "/app/hash-worker.js",
  "/app/",
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

/** Signatures as a client might get them wrong: short, huge, not hex, or plain random hex. */
function signatureArbitrary() {
  return fc.oneof(
    fc.string({ maxLength: 140 }),
    fc.uint8Array({ minLength: 0, maxLength: 200 }).map((b) => `0x${b.toHex()}`),
    fc.constantFrom("0x", "0xzz", "zz", "0x" + "ab".repeat(40_000), "0X00", ""),
    fc.anything(),
  );
}

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
    fc.record({ message: fc.oneof(fc.string(), fc.anything()), signature: signatureArbitrary() })
      .map((o) => new TextEncoder().encode(JSON.stringify(o))),
  ),
  useToken: fc.boolean(),
});

Deno.test("fuzz: random requests to every route never get a 500, a non-JSON error or an undeclared answer", async () => {
  // A wallet tier whose chain is down: sign-in parses and checks, balances answer 503.
  await using server = await startTestServer({
    args: ["--signup-limit", "100000", ...walletArgs(deadRpcUrl())],
  });
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

/** An edit to a valid SIWE message: a character changed, a line dropped or doubled, a field's value swapped. */
const messageEdit = fc.oneof(
  fc.record({ kind: fc.constant("char" as const), at: fc.nat(), to: fc.string({ maxLength: 3 }) }),
  fc.record({ kind: fc.constant("drop" as const), line: fc.nat() }),
  fc.record({ kind: fc.constant("double" as const), line: fc.nat() }),
  fc.record({
    kind: fc.constant("field" as const),
    line: fc.nat(),
    value: fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom("0", "-1", "99999999999999999999", "2026-02-30T00:00:00Z", "x".repeat(9000)),
    ),
  }),
);

function applyEdit(
  message: string,
  edit: typeof messageEdit extends fc.Arbitrary<infer T> ? T : never,
) {
  const lines = message.split("\n");
  if (edit.kind === "char") {
    const at = edit.at % message.length;
    return message.slice(0, at) + edit.to + message.slice(at + 1);
  }
  const line = edit.line % lines.length;
  if (edit.kind === "drop") lines.splice(line, 1);
  else if (edit.kind === "double") lines.splice(line, 0, lines[line]);
  else lines[line] = lines[line].replace(/: .*$/, `: ${edit.value}`);
  return lines.join("\n");
}

Deno.test("fuzz: edited Sign-In with Ethereum messages are refused with 401, never a token or a 500", async () => {
  await using server: TestServer = await startTestServer({ args: walletArgs(deadRpcUrl()) });
  const contract = await ApiContract.fetchFrom(server.url);
  await fc.assert(
    fc.asyncProperty(messageEdit, fc.boolean(), async (edit, keepSignature) => {
      const signed = await signedMessage(server.url, devKey(1));
      const message = applyEdit(signed.message, edit);
      const signature = keepSignature ? signed.signature : `0x${"11".repeat(65)}`;
      const response = await postSignIn(server.url, { message, signature });
      const text = await response.text();
      const undeclared = contract.violation({
        method: "POST",
        pathname: "/api/auth/wallet",
        status: response.status,
        code: errorCodeOf(text, response.headers),
        headers: response.headers,
      });
      assertEquals(undeclared, null, text);
      if (message === signed.message && keepSignature) {
        assertEquals(response.status, 201, text);
        return;
      }
      // A key's signature is checked without the chain; a changed message is not the key's
      // any more, so only a contract wallet could vouch for it, and the chain is down (503).
      const code = JSON.parse(text).error;
      assertOk(
        ["invalid_signature", "invalid_request", "wallet_unavailable"].includes(code),
        `${response.status} ${text}\n${message}`,
      );
    }),
    { numRuns: Math.min(RUNS, 150), seed: SEED },
  );
});
