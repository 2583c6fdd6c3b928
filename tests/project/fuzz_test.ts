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
import { packFiles } from "../helpers/ipfs.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { varint } from "multiformats";

const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? "400");
const SEED = Number(Deno.env.get("FUZZ_SEED") ?? "20261121");

const PATHS = [
  "/api/upload",
  "/p/bafkfuzzpiece01",
  "/p/",
  "/ipfs/bafkqaaa",
  "/ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
  "/ipfs/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
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
    "application/vnd.ipld.car",
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
    fc.constantFrom(
      "cid",
      "token",
      "limit",
      "cursor",
      "from",
      "to",
      "size",
      "x",
      "format",
      "dag-scope",
      "car-dups",
    ),
    fc.oneof(
      fc.string({ maxLength: 90 }),
      fc.constantFrom("bafkfuzzpiece01", "0", "-1", "2026-02-30", "raw", "car", "entity", "y"),
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
      "accept",
    ),
    fc.oneof(
      headerValue,
      fc.constantFrom(
        "application/vnd.ipld.raw",
        "application/vnd.ipld.car; version=1; order=dfs; dups=y",
        "application/vnd.ipld.car",
        "application/vnd.ipld.car; version=2",
      ),
    ),
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

/** A small real CAR to break: ipfs-car's packing of two files (7 blocks). */
async function smallCar(): Promise<Uint8Array<ArrayBuffer>> {
  const { car } = await packFiles({
    "a/one.bin": new Uint8Array(3000).fill(1),
    "a/two.txt": new TextEncoder().encode("two"),
    "three.txt": new TextEncoder().encode("three"),
  });
  return car;
}

function varintOf(value: number): number[] {
  return [...varint.encodeTo(value, new Uint8Array(varint.encodingLength(value)))];
}

/** Ways to break a CAR: flips, cuts, insertions, and the lies a parser must bound. */
const carBreakage = fc.oneof(
  fc.record({
    kind: fc.constant("flip" as const),
    at: fc.nat(),
    xor: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  }),
  // A varint cut short: continuation bytes and then the end.
  fc.record({ kind: fc.constant("truncated_varint" as const), at: fc.nat({ max: 300 }) }),
  // The header claims more than it has (up to 2^40 bytes).
  fc.record({
    kind: fc.constant("header_lie" as const),
    length: fc.integer({ min: 1, max: 2 ** 40 }),
  }),
  // A block's cid whose multihash claims an absurd length.
  fc.record({
    kind: fc.constant("cid_lie" as const),
    length: fc.integer({ min: 33, max: 2 ** 32 }),
  }),
);

function broken(
  car: Uint8Array,
  breakage: typeof carBreakage extends fc.Arbitrary<infer T> ? T : never,
) {
  const [headerLength, headerVarintBytes] = varint.decode(car);
  const firstSection = headerVarintBytes + headerLength;
  switch (breakage.kind) {
    case "flip": {
      const out = car.slice();
      out[breakage.at % out.length] ^= breakage.xor;
      return out;
    }
    case "cut":
      return car.slice(0, 1 + (breakage.at % (car.length - 1)));
    case "insert": {
      const at = breakage.at % car.length;
      return Uint8Array.from([...car.subarray(0, at), ...breakage.bytes, ...car.subarray(at)]);
    }
    case "truncated_varint":
      return Uint8Array.from([...car.subarray(0, Math.min(breakage.at, car.length)), 0xff, 0xff]);
    case "header_lie":
      return Uint8Array.from([...varintOf(breakage.length), ...car.subarray(headerVarintBytes)]);
    case "cid_lie":
      // section length 64: CIDv1, raw, sha2-256 with the lying digest length, then filler
      return Uint8Array.from([
        ...car.subarray(0, firstSection),
        64,
        0x01,
        0x55,
        0x12,
        ...varintOf(breakage.length),
        ...new Uint8Array(64),
      ]);
  }
}

Deno.test("fuzz: malformed CARs are refused with a clean 400 invalid_car, never a 500, memory bounded", async () => {
  await using server = await startTestServer({
    args: [
      "--log-requests",
      "false",
      "--sponsored-max-file-size",
      "1GiB",
      "--sponsored-daily-cap",
      "100GiB",
    ],
  });
  const car = await smallCar();
  const rssBefore = Deno.memoryUsage().rss;
  let uploads = 0;
  await fc.assert(
    fc.asyncProperty(carBreakage, async (breakage) => {
      const body = broken(car, breakage);
      const response = await server.upload(`bafkfuzzcar${++uploads}`, body, {
        contentType: "application/vnd.ipld.car",
      });
      const text = await response.text();
      // A cut exactly at a section's end, or a flip inside a root cid, is still a valid CAR.
      if (response.status === 200) return;
      assertEquals(response.status, 400, `${JSON.stringify(breakage)}: ${text}`);
      assertEquals(JSON.parse(text).error, "invalid_car", text);
    }),
    { numRuns: Math.ceil(RUNS / 2), seed: SEED, endOnFailure: true },
  );
  assertOk(uploads >= RUNS / 2);
  // Lengths that lie are refused as soon as they are read: the server answers while 256 MiB of
  // the declared body were never sent, so it cannot have waited for them or buffered them.
  const port = Number(new URL(server.url).port);
  const [headerLength, headerVarintBytes] = varint.decode(car);
  const start = car.subarray(0, headerVarintBytes + headerLength);
  const lies = [
    Uint8Array.from([...varintOf(2 ** 40), 0xa2]),
    Uint8Array.from([...start, ...varintOf(2 ** 50), 0x01, 0x55, 0x12, 0x20]),
    Uint8Array.from([
      ...start,
      64,
      0x01,
      0x55,
      0x12,
      0xff,
      0xff,
      0xff,
      0xff,
      0x0f,
      ...new Uint8Array(60),
    ]),
  ];
  for (const [i, lie] of lies.entries()) {
    const answer = await rawRequest(
      port,
      `POST /api/upload?cid=bafkfuzzlie${i} HTTP/1.1\nHost: x\nContent-Type: application/vnd.ipld.car\n` +
        `Content-Length: ${256 * 1024 * 1024}\n`,
      { body: lie },
    );
    assertEquals(answer?.status, 400, answer?.body);
    assertEquals(JSON.parse(answer!.body).error, "invalid_car");
  }
  const grown = Deno.memoryUsage().rss - rssBefore;
  assertOk(grown < 128 * 1024 * 1024, `resident memory grew by ${grown} bytes`);
  assertEquals(server.logs.filter((l) => l.msg === "unhandled error"), []);
  const health = await server.get("/healthz");
  assertEquals(health.status, 200, "still serving");
  await health.body?.cancel();
});
