/**
 * The document declares what the routes really answer: a scenario table per
 * operation provokes, from outside and against the real server, every answer
 * it can (each error code, each success), and each scenario checks both that
 * it got the status and code it expects and that the served /openapi.json
 * declares that (status, code) for the operation. Every other answer seen on
 * the way (signups, uploads made as setup) is judged against the document too.
 * A last test checks that every declared answer is provoked here or listed in
 * OUT_OF_REACH with the reason it cannot be.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertOk } from "./helpers/assert.ts";
import { jtiOf, patternBytes, startTestServer } from "./helpers/server.ts";
import { ApiContract } from "./openapi_contract.ts";
import { createProbe } from "./openapi_probe.ts";
import type { Answer, Probe, SendInit } from "./openapi_probe.ts";
import { deadRpcUrl, devKey, signedMessage, walletArgs } from "./helpers/wallet.ts";

interface Scenario {
  name: string;
  /** Flags of the scenario's own server. */
  args?: string[];
  send(probe: Probe): Promise<Answer>;
  status: number;
  /** The JSON error code expected; omitted for answers without one (successes, HEAD). */
  code?: string;
}

const CID = "bafkscenario01";
const JSON_HEADERS = { "content-type": "application/json" };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A raw POST with the given extra header lines, e.g. for a body cut short. */
const rawPost = (path: string, headers: string) =>
  `POST ${path} HTTP/1.1\nHost: x\nConnection: close\n${headers}`;

const postJson = (p: Probe, path: string, body: unknown, headers: Record<string, string> = {}) =>
  p.send("POST", path, {
    headers: { ...JSON_HEADERS, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

/** A stored piece and its cid, for retrieval scenarios. */
async function stored(p: Probe): Promise<string> {
  const answer = await p.upload(CID, "stored bytes");
  assertEquals(answer.status, 200, answer.body);
  return CID;
}

/**
 * A stored piece marked corrupt, as `main.ts scrub` marks one whose bytes fail
 * verification (tests/backup_scrub_test.ts flips a byte and runs the real one).
 */
async function corrupted(p: Probe): Promise<string> {
  const cid = await stored(p);
  const scrub = new DatabaseSync(`${p.server.dataDir}/storage.db`);
  try {
    scrub.prepare(
      "INSERT INTO corrupt_pieces (cid, marked_at, problem) VALUES (?, '2026-01-01T00:00:00Z', 'test')",
    ).run(cid);
  } finally {
    scrub.close();
  }
  return cid;
}

/** The real PieceCIDv2 of `bytes`, computed by the server. */
async function pieceCidOf(p: Probe, bytes: string): Promise<string> {
  const answer = await p.send("POST", "/api/piece-cids", {
    headers: bearer(await p.token()),
    body: bytes,
  });
  assertEquals(answer.status, 200, answer.body);
  return JSON.parse(answer.body).cid;
}

/** Scenarios shared by every route that needs a token with a scope. */
function tokenScenarios(
  method: string,
  path: string,
  options: { scope?: string; body?: (p: Probe) => SendInit } = {},
): Scenario[] {
  const init = (p: Probe, headers: Record<string, string>) => {
    const extra = options.body?.(p) ?? {};
    return { ...extra, headers: { ...extra.headers, ...headers } };
  };
  const scenarios: Scenario[] = [
    {
      name: "no token",
      send: (p) => p.send(method, path, init(p, {})),
      status: 401,
      code: "invalid_token",
    },
    {
      name: "a garbage bearer token",
      send: (p) => p.send(method, path, init(p, bearer("pk_live_a.b.c"))),
      status: 401,
      code: "invalid_token",
    },
    {
      name: "a revoked token",
      send: async (p) => {
        const token = await p.token();
        const revoked = await postJson(
          p,
          "/api/tokens/revoke",
          { jti: jtiOf(token) },
          bearer(token),
        );
        assertEquals(revoked.status, 200, revoked.body);
        return p.send(method, path, init(p, bearer(token)));
      },
      status: 401,
      code: "revoked_token",
    },
  ];
  if (options.scope) {
    scenarios.push({
      name: `a token without the ${options.scope} scope`,
      send: async (p) => {
        const other = options.scope === "get" ? "put" : "get";
        return p.send(method, path, init(p, bearer(await p.token({ scopes: [other] }))));
      },
      status: 403,
      code: "insufficient_scope",
    });
  }
  return scenarios;
}

function wrongMethod(method: string, path: string): Scenario {
  return {
    name: `${method} on a path that does not serve it`,
    send: (p) => p.send(method, path),
    status: 405,
    code: method === "HEAD" ? undefined : "method_not_allowed",
  };
}

const uploadPath = `/api/upload?cid=${CID}`;
/** The --metrics-token of the scenarios that protect /metrics. */
const METRICS_TOKEN = "metrics-scenario-token-01";

/** An SMTP URL nothing listens on: a port taken from the OS and given back at once. */
const DEAD_SMTP_URL = (() => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return `smtp://127.0.0.1:${port}`;
})();

/**
 * A wallet tier whose chain is down: sign-in still works (a key's signature is
 * checked without the chain), anything that needs a balance answers 503.
 */
const WALLET_ARGS = walletArgs(deadRpcUrl());

/** A wallet token from the probe's server (which must run with WALLET_ARGS). */
async function walletToken(p: Probe): Promise<string> {
  const signed = await signedMessage(p.server.url, devKey(1));
  const answer = await postJson(p, "/api/auth/wallet", signed);
  assertEquals(answer.status, 201, answer.body);
  return JSON.parse(answer.body).token;
}

/** A wallet token's request on a server whose chain cannot be reached. */
function chainDown(
  name: string,
  send: (p: Probe, auth: Record<string, string>) => Promise<Answer>,
) {
  return {
    name,
    args: WALLET_ARGS,
    send: async (p: Probe) => send(p, bearer(await walletToken(p))),
    status: 503,
    code: "wallet_unavailable",
  };
}

/** A GET of path sent again with the ETag of the first answer. */
async function revalidated(p: Probe, path: string): Promise<Answer> {
  const first = await fetch(`${p.server.url}${path}`);
  await first.body?.cancel();
  return p.send("GET", path, { headers: { "if-none-match": first.headers.get("etag")! } });
}

/**
 * What every route that reads a JSON body answers to a bad one; withToken
 * for routes that check the caller's token before they read the body.
 */
function jsonBodyScenarios(
  path: string,
  options: { args?: string[]; withToken?: boolean } = {},
): Scenario[] {
  const args = options.args ?? [];
  const authorization = async (p: Probe) =>
    options.withToken ? `Authorization: Bearer ${await p.token()}\n` : "";
  const auth = async (p: Probe): Promise<Record<string, string>> =>
    options.withToken ? bearer(await p.token()) : {};
  const head = async (p: Probe, length: number) =>
    `${await authorization(p)}Content-Type: application/json\nContent-Length: ${length}\n`;
  return [
    {
      name: "malformed JSON",
      args,
      send: async (p) => postJson(p, path, "{nope", await auth(p)),
      status: 400,
      code: "invalid_json",
    },
    {
      name: "a body over 64 KiB",
      args,
      send: async (p) => postJson(p, path, { pad: "x".repeat(70_000) }, await auth(p)),
      status: 413,
      code: "too_large",
    },
    {
      name: "a body that ends before its Content-Length",
      args,
      send: async (p) => p.raw(rawPost(path, await head(p, 100)), { body: "{", closeWrite: true }),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "a JSON body that stalls",
      args: [...args, "--body-idle-timeout", "1"],
      send: async (p) => p.raw(rawPost(path, await head(p, 50)), { body: "{" }),
      status: 408,
      code: "request_timeout",
    },
  ];
}

const SCENARIOS: Record<string, Scenario[]> = {
  upload: [
    chainDown("a wallet token, its chain down", (p, auth) => p.upload(CID, "x", { headers: auth })),
    { name: "a sponsored upload", send: (p) => p.upload(CID, "hello"), status: 200 },
    {
      name: "the same bytes again under a stored cid",
      send: async (p) => {
        assertEquals((await p.upload(CID, "hello")).status, 200);
        return p.upload(CID, "hello");
      },
      status: 200,
    },
    {
      name: "an upload with a token",
      send: async (p) => p.upload(CID, "hello", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "a missing cid",
      send: (p) => p.send("POST", "/api/upload", { body: "x" }),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "a 7-character cid",
      send: (p) => p.upload("abc1234", "x"),
      status: 400,
      code: "invalid_cid",
    },
    ...tokenScenarios("POST", uploadPath, {
      scope: "put",
      body: () => ({ headers: { "content-type": "text/plain" }, body: "hello" }),
    }).filter((s) => s.name !== "no token"),
    {
      name: "no Content-Length and no body",
      send: (p) => p.raw(rawPost(uploadPath, "Content-Type: text/plain\n")),
      status: 400,
      code: "no_body",
    },
    {
      name: "Content-Length: 0",
      send: (p) => p.upload(CID, new Uint8Array(0)),
      status: 400,
      code: "empty_bodyy",
    },
    {
      name: "a chunked body",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nTransfer-Encoding: chunked\n"), {
          body: "5\r\nhello\r\n0\r\n\r\n",
        }),
      status: 411,
      code: "length_required",
    },
    {
      name: "no Content-Type",
      send: (p) => p.raw(rawPost(uploadPath, "Content-Length: 5\n"), { body: "hello" }),
      status: 400,
      code: "invalid_content_type",
    },
    {
      name: "a multipart form body",
      send: (p) => {
        const form = new FormData();
        form.append("file", new Blob(["hello"]), "a.txt");
        return p.send("POST", uploadPath, { body: form });
      },
      status: 400,
      code: "invalid_content_type",
    },
    {
      name: "an X-Filename that does not URL-decode",
      send: (p) => p.upload(CID, "hello", { headers: { "x-filename": "%E0%A4%A" } }),
      status: 400,
      code: "invalid_filename",
    },
    {
      name: "a PieceCIDv2 of another size",
      send: async (p) => p.upload(await pieceCidOf(p, "hello"), "hello!"),
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "a PieceCIDv2 of other bytes of the same size",
      send: async (p) => p.upload(await pieceCidOf(p, "hello"), "jello"),
      status: 400,
      code: "cid_mismatch",
    },
    {
      name: "a file over the per-file cap",
      args: ["--sponsored-max-file-size", "1KiB"],
      send: (p) => p.upload(CID, new Uint8Array(1025)),
      status: 413,
      code: "too_large",
    },
    {
      name: "a file past the sponsored daily cap",
      args: ["--sponsored-daily-cap", "1KiB"],
      send: async (p) => {
        assertEquals((await p.upload("bafkfillscap01", new Uint8Array(1024))).status, 200);
        return p.upload(CID, "x");
      },
      status: 429,
      code: "rate_limited",
    },
    {
      name: "a file past the token's daily quota",
      send: async (p) => {
        const auth = bearer(await p.token({ quotaMb: 1 }));
        const full = await p.upload("bafkfillsquota1", patternBytes(1024 * 1024), {
          headers: auth,
        });
        assertEquals(full.status, 200, full.body);
        return p.upload(CID, "x", { headers: auth });
      },
      status: 429,
      code: "quota_exceeded",
    },
    {
      name: "a body that ends before its Content-Length",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 100\n"), {
          body: "x".repeat(50),
          closeWrite: true,
        }),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "a body that stalls",
      args: ["--body-idle-timeout", "1"],
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 100\n"), {
          body: "x".repeat(50),
        }),
      status: 408,
      code: "request_timeout",
    },
    {
      name: "a Content-Length past what a number holds exactly",
      send: (p) =>
        p.raw(rawPost(uploadPath, "Content-Type: text/plain\nContent-Length: 9007199254740993\n"), {
          body: "x",
        }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "other bytes under a stored cid",
      send: async (p) => {
        assertEquals((await p.upload(CID, "first")).status, 200);
        return p.upload(CID, "second");
      },
      status: 409,
      code: "cid_conflict",
    },
    {
      name: "a store that refuses the write (a directory where the piece goes)",
      send: async (p) => {
        const { shardOf } = await import("../src/storage/driver/disk/layout.ts");
        await Deno.mkdir(`${p.server.dataDir}/pieces/${shardOf(CID)}/${CID}/blocker`, {
          recursive: true,
        });
        return p.upload(CID, "hello");
      },
      status: 502,
      code: "stage_failed",
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.upload(CID, "hello"),
      status: 503,
      code: "storage_offline",
    },
    {
      name: "a database locked by another process",
      args: ["--db-busy-timeout", "100"],
      send: async (p) => {
        const intruder = new DatabaseSync(`${p.server.dataDir}/storage.db`);
        intruder.exec("BEGIN EXCLUSIVE");
        try {
          return await p.upload(CID, "hello");
        } finally {
          intruder.exec("ROLLBACK");
          intruder.close();
        }
      },
      status: 503,
      code: "storage_offline",
    },
    wrongMethod("GET", uploadPath),
    wrongMethod("PUT", uploadPath),
  ],
  getPiece: [
    {
      name: "a stored piece",
      send: async (p) => p.send("GET", `/p/${await stored(p)}`),
      status: 200,
    },
    {
      name: "a stored piece, again (from the small-piece cache)",
      send: async (p) => {
        assertEquals((await p.send("GET", `/p/${await stored(p)}`)).status, 200);
        return p.send("GET", `/p/${CID}`);
      },
      status: 200,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) =>
        p.send("GET", `/p/${await stored(p)}`, { headers: { "if-none-match": `"${CID}"` } }),
      status: 304,
    },
    {
      name: "a malformed cid",
      send: (p) => p.send("GET", "/p/abc"),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "a cid nothing is stored under",
      send: (p) => p.send("GET", "/p/bafkmissing0001"),
      status: 404,
      code: "not_found",
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.send("GET", "/p/bafkmissing0001"),
      status: 503,
      code: "storage_offline",
    },
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => p.send("GET", `/p/${await corrupted(p)}`),
      status: 503,
      code: "piece_corrupt",
    },
    wrongMethod("POST", `/p/${CID}`),
  ],
  headPiece: [
    {
      name: "a stored piece",
      send: async (p) => p.send("HEAD", `/p/${await stored(p)}`),
      status: 200,
    },
    {
      name: "If-None-Match with its ETag",
      send: async (p) =>
        p.send("HEAD", `/p/${await stored(p)}`, { headers: { "if-none-match": `"${CID}"` } }),
      status: 304,
    },
    { name: "a malformed cid", send: (p) => p.send("HEAD", "/p/abc"), status: 400 },
    {
      name: "a cid nothing is stored under",
      send: (p) => p.send("HEAD", "/p/bafkmissing0001"),
      status: 404,
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => p.send("HEAD", "/p/bafkmissing0001"),
      status: 503,
    },
    {
      name: "a piece a scrub marked corrupt",
      send: async (p) => p.send("HEAD", `/p/${await corrupted(p)}`),
      status: 503,
    },
  ],
  signup: [
    {
      name: "an e-mail and a label",
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x" }),
      status: 201,
    },
    {
      name: "an e-mail without @",
      send: (p) => postJson(p, "/api/auth/signup", { email: "nobody", label: "x" }),
      status: 400,
      code: "invalid_email",
    },
    {
      name: "an empty label",
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "" }),
      status: 400,
      code: "invalid_label",
    },
    {
      name: "an unknown scope",
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x", scopes: ["x"] }),
      status: 400,
      code: "invalid_scopes",
    },
    {
      name: "a zero quota",
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x", quotaMb: 0 }),
      status: 400,
      code: "invalid_quota",
    },
    {
      name: "a second signup past --signup-limit 1",
      args: ["--signup-limit", "1"],
      send: async (p) => {
        await p.token();
        return postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x" });
      },
      status: 429,
      code: "rate_limited",
    },
    {
      name: "no storage bound",
      args: ["--data-dir", ""],
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x" }),
      status: 503,
      code: "storage_offline",
    },
    {
      name: "--signup closed",
      args: ["--signup", "closed"],
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x" }),
      status: 403,
      code: "signup_closed",
    },
    {
      name: "--signup verify with a mail server that is not there",
      args: ["--signup", "verify", "--smtp-url", DEAD_SMTP_URL, "--mail-from", "s@example.org"],
      send: (p) => postJson(p, "/api/auth/signup", { email: "a@b.co", label: "x" }),
      status: 503,
      code: "mail_unavailable",
    },
    wrongMethod("GET", "/api/auth/signup"),
    ...jsonBodyScenarios("/api/auth/signup"),
  ],
  getWalletNonce: [
    {
      name: "a server with a wallet tier",
      args: WALLET_ARGS,
      send: (p) => p.send("GET", "/api/auth/wallet/nonce"),
      status: 200,
    },
    {
      name: "a server without one",
      send: (p) => p.send("GET", "/api/auth/wallet/nonce"),
      status: 503,
      code: "wallet_unavailable",
    },
    {
      name: "past the nonces one address may ask for per hour",
      args: WALLET_ARGS,
      send: async (p) => {
        for (let i = 0; i < 300; i++) {
          const answer = await p.send("GET", "/api/auth/wallet/nonce");
          assertEquals(answer.status, 200, answer.body);
        }
        return p.send("GET", "/api/auth/wallet/nonce");
      },
      status: 429,
      code: "rate_limited",
    },
    wrongMethod("DELETE", "/api/auth/wallet/nonce"),
  ],
  headWalletNonce: [{
    name: "a server with a wallet tier",
    args: WALLET_ARGS,
    send: (p) => p.send("HEAD", "/api/auth/wallet/nonce"),
    status: 200,
  }],
  signInWithWallet: [
    {
      name: "a signed message for this server",
      args: WALLET_ARGS,
      send: async (p) =>
        postJson(p, "/api/auth/wallet", await signedMessage(p.server.url, devKey(1))),
      status: 201,
    },
    {
      name: "a message for another domain",
      args: WALLET_ARGS,
      send: async (p) =>
        postJson(
          p,
          "/api/auth/wallet",
          await signedMessage(p.server.url, devKey(1), { overrides: { domain: "example.org" } }),
        ),
      status: 401,
      code: "invalid_signature",
    },
    {
      name: "a message that is not a string",
      args: WALLET_ARGS,
      send: (p) => postJson(p, "/api/auth/wallet", { message: 1, signature: "0x00" }),
      status: 400,
      code: "invalid_request",
    },
    ...jsonBodyScenarios("/api/auth/wallet", { args: WALLET_ARGS }),
    {
      name: "a server without a wallet tier",
      send: (p) => postJson(p, "/api/auth/wallet", { message: "x", signature: "0x00" }),
      status: 503,
      code: "wallet_unavailable",
    },
    wrongMethod("GET", "/api/auth/wallet"),
  ],
  verifySignup: [
    {
      name: "a code when none was sent (--signup open)",
      send: (p) => postJson(p, "/api/auth/signup/verify", { email: "a@b.co", code: "12345678" }),
      status: 400,
      code: "invalid_code",
    },
    {
      name: "no code",
      send: (p) => postJson(p, "/api/auth/signup/verify", { email: "a@b.co" }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "--signup closed",
      args: ["--signup", "closed"],
      send: (p) => postJson(p, "/api/auth/signup/verify", { email: "a@b.co", code: "1" }),
      status: 403,
      code: "signup_closed",
    },
    wrongMethod("GET", "/api/auth/signup/verify"),
    ...jsonBodyScenarios("/api/auth/signup/verify"),
  ],
  revokeToken: [
    {
      name: "a token revoking itself",
      send: async (p) => {
        const token = await p.token();
        return postJson(p, "/api/tokens/revoke", { jti: jtiOf(token) }, bearer(token));
      },
      status: 200,
    },
    ...tokenScenarios("POST", "/api/tokens/revoke", {
      body: () => ({ headers: JSON_HEADERS, body: JSON.stringify({ jti: "x" }) }),
    }),
    {
      name: "a jti that is not a string",
      send: async (p) => postJson(p, "/api/tokens/revoke", { jti: 5 }, bearer(await p.token())),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "a sibling's jti from a token without the list scope",
      send: async (p) => {
        const sibling = await p.token({ email: "same@example.org" });
        const putOnly = await p.token({ email: "same@example.org", scopes: ["put"] });
        return postJson(p, "/api/tokens/revoke", { jti: jtiOf(sibling) }, bearer(putOnly));
      },
      status: 403,
      code: "insufficient_scope",
    },
    {
      name: "an unknown jti",
      send: async (p) =>
        postJson(p, "/api/tokens/revoke", { jti: crypto.randomUUID() }, bearer(await p.token())),
      status: 404,
      code: "not_found",
    },
    wrongMethod("GET", "/api/tokens/revoke"),
    ...jsonBodyScenarios("/api/tokens/revoke", { withToken: true }),
  ],
  listTokens: [
    {
      name: "a token with the list scope",
      send: async (p) => p.send("GET", "/api/tokens", { headers: bearer(await p.token()) }),
      status: 200,
    },
    ...tokenScenarios("GET", "/api/tokens", { scope: "list" }),
    wrongMethod("POST", "/api/tokens"),
  ],
  headListTokens: [
    {
      name: "a token with the list scope",
      send: async (p) => p.send("HEAD", "/api/tokens", { headers: bearer(await p.token()) }),
      status: 200,
    },
    { name: "no token", send: (p) => p.send("HEAD", "/api/tokens"), status: 401 },
  ],
  listFiles: [
    {
      name: "a page of the caller's uploads",
      send: async (p) => {
        const auth = bearer(await p.token());
        assertEquals((await p.upload(CID, "mine", { headers: auth })).status, 200);
        return p.send("GET", "/api/files?limit=1", { headers: auth });
      },
      status: 200,
    },
    {
      name: "limit=0",
      send: async (p) => p.send("GET", "/api/files?limit=0", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "a cursor this service never returned",
      send: async (p) =>
        p.send("GET", "/api/files?cursor=%21%21", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/files", { scope: "list" }),
    wrongMethod("DELETE", "/api/files"),
  ],
  headListFiles: [
    {
      name: "a token with the list scope",
      send: async (p) => p.send("HEAD", "/api/files", { headers: bearer(await p.token()) }),
      status: 200,
    },
  ],
  getUsage: [
    {
      name: "the default range",
      send: async (p) => p.send("GET", "/api/usage", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "a date that does not exist",
      send: async (p) =>
        p.send("GET", "/api/usage?from=2026-02-30", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/usage", { scope: "list" }),
    chainDown(
      "a wallet token, its chain down",
      (p, auth) => p.send("GET", "/api/usage", { headers: auth }),
    ),
    wrongMethod("POST", "/api/usage"),
  ],
  headUsage: [
    {
      name: "the default range",
      send: async (p) => p.send("HEAD", "/api/usage", { headers: bearer(await p.token()) }),
      status: 200,
    },
  ],
  extendDeal: [
    {
      name: "the caller's deal",
      send: async (p) => {
        const auth = bearer(await p.token());
        const upload = await p.upload(CID, "mine", { headers: auth });
        const { dealId } = JSON.parse(upload.body);
        return p.send("POST", `/api/deals/${dealId}/extend`, { headers: auth });
      },
      status: 200,
    },
    {
      name: "an unknown deal",
      send: async (p) =>
        p.send("POST", "/api/deals/no-such-deal/extend", { headers: bearer(await p.token()) }),
      status: 404,
      code: "not_found",
    },
    ...tokenScenarios("POST", "/api/deals/no-such-deal/extend", { scope: "pin" }),
    wrongMethod("GET", "/api/deals/no-such-deal/extend"),
  ],
  getLimits: [
    { name: "sponsored", send: (p) => p.send("GET", "/api/limits"), status: 200 },
    {
      name: "with a token and ?size=",
      send: async (p) => p.send("GET", "/api/limits?size=10", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "size=0",
      send: (p) => p.send("GET", "/api/limits?size=0"),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/limits").filter((s) => s.name !== "no token"),
    chainDown(
      "a wallet token, its chain down",
      (p, auth) => p.send("GET", "/api/limits", { headers: auth }),
    ),
    wrongMethod("POST", "/api/limits"),
  ],
  headLimits: [
    { name: "sponsored", send: (p) => p.send("HEAD", "/api/limits"), status: 200 },
    { name: "size=0", send: (p) => p.send("HEAD", "/api/limits?size=0"), status: 400 },
  ],
  describePieceCids: [
    { name: "the forms", send: (p) => p.send("GET", "/api/piece-cids"), status: 200 },
    wrongMethod("DELETE", "/api/piece-cids"),
  ],
  headDescribePieceCids: [
    { name: "the forms", send: (p) => p.send("HEAD", "/api/piece-cids"), status: 200 },
  ],
  computePieceCid: [
    {
      name: "some bytes",
      send: async (p) =>
        p.send("POST", "/api/piece-cids", { headers: bearer(await p.token()), body: "hello" }),
      status: 200,
    },
    ...tokenScenarios("POST", "/api/piece-cids", {
      scope: "put",
      body: () => ({ body: "hello" }),
    }),
    {
      name: "no Content-Length and no body",
      send: async (p) =>
        p.raw(rawPost("/api/piece-cids", `Authorization: Bearer ${await p.token()}\n`)),
      status: 400,
      code: "no_body",
    },
    {
      name: "Content-Length: 0",
      send: async (p) =>
        p.send("POST", "/api/piece-cids", { headers: bearer(await p.token()), body: "" }),
      status: 400,
      code: "empty_bodyy",
    },
    {
      name: "a chunked body",
      send: async (p) =>
        p.raw(
          rawPost(
            "/api/piece-cids",
            `Authorization: Bearer ${await p.token()}\nTransfer-Encoding: chunked\n`,
          ),
          { body: "5\r\nhello\r\n0\r\n\r\n" },
        ),
      status: 411,
      code: "length_required",
    },
    {
      name: "a body over the token's per-file cap",
      args: ["--token-max-file-size", "1KiB"],
      send: async (p) =>
        p.send("POST", "/api/piece-cids", {
          headers: bearer(await p.token()),
          body: "x".repeat(1025),
        }),
      status: 413,
      code: "too_large",
    },
    {
      name: "a body that ends before its Content-Length",
      send: async (p) =>
        p.raw(
          rawPost(
            "/api/piece-cids",
            `Authorization: Bearer ${await p.token()}\nContent-Length: 100\n`,
          ),
          { body: "x".repeat(50), closeWrite: true },
        ),
      status: 400,
      code: "incomplete_body",
    },
    {
      name: "a body that stalls",
      args: ["--body-idle-timeout", "1"],
      send: async (p) =>
        p.raw(
          rawPost(
            "/api/piece-cids",
            `Authorization: Bearer ${await p.token()}\nContent-Length: 100\n`,
          ),
          { body: "x".repeat(50) },
        ),
      status: 408,
      code: "request_timeout",
    },
    {
      name: "a Content-Length past what a number holds exactly",
      send: async (p) =>
        p.raw(
          rawPost(
            "/api/piece-cids",
            `Authorization: Bearer ${await p.token()}\nContent-Length: 9007199254740993\n`,
          ),
          { body: "x" },
        ),
      status: 400,
      code: "invalid_request",
    },
    wrongMethod("PUT", "/api/piece-cids"),
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

/**
 * Declared answers no scenario provokes, and why; "*" applies to every operation.
 * Keys are "status code" as the coverage test below spells them.
 */
const OUT_OF_REACH: Record<string, Record<string, string>> = {
  "*": {
    "500 internal_error": "an exception nobody anticipated: a bug, never provoked on purpose",
    "503 storage_offline": "needs SQLite busy past --db-busy-timeout or the store offline; " +
      "provoked above on upload, signup and getPiece",
  },
  upload: {
    "507 insufficient_storage": "needs a full disk (tests/storage_faults_test.ts mounts a tmpfs)",
    "503 server_busy": "needs uploads held in flight past --upload-memory: " +
      "tests/hardening_test.ts holds one open",
  },
  signup: {
    "202": "needs a mail server that takes the code: tests/signup_modes_test.ts runs one",
  },
  computePieceCid: {
    "429 rate_limited": "needs bodies held in flight past --max-uploads-per-client: " +
      "tests/hardening_test.ts holds one open",
    "503 server_busy": "needs bodies held in flight past --upload-memory (as for uploads)",
  },
  verifySignup: {
    "201": "needs the code from a delivered mail: tests/signup_modes_test.ts reads it",
    "503 storage_offline": "a code is only ever sent by a server with its database",
  },
};

/** Answers the scenarios provoked, by operation: "status code", or "status" without a code. */
const provoked = new Map<string, Set<string>>();
let scenariosRun = 0;
const scenarioCount = Object.values(SCENARIOS).flat().length;

for (const [operationId, scenarios] of Object.entries(SCENARIOS)) {
  for (const scenario of scenarios) {
    const expected = `${scenario.status}${scenario.code ? ` ${scenario.code}` : ""}`;
    Deno.test(`openapi declared: ${operationId}: ${scenario.name} → ${expected}`, async () => {
      await using server = await startTestServer({ args: scenario.args });
      const contract = await ApiContract.fetchFrom(server.url);
      const probe = createProbe(server, contract);
      const answer = await scenario.send(probe);
      assertEquals(
        `${answer.status}${answer.code ? ` ${answer.code}` : ""}`,
        expected,
        `${answer.method} ${answer.pathname}: ${answer.body}`,
      );
      // The answer belongs to this operation (or, for 405, to a method its path lacks).
      const resolved = contract.resolve(answer.method, answer.pathname);
      const operations = resolved.kind === "operation"
        ? [resolved.operation]
        : resolved.kind === "other_method"
        ? resolved.operations
        : [];
      const operation = operations.find((o) => o.operationId === operationId);
      assertOk(operation, `${answer.method} ${answer.pathname} is not ${operationId}`);
      if (probe.violations.length > 0) throw new Error(probe.violations.join("\n"));
      assertOk(
        contract.declares(operation, answer.status, answer.code),
        `${operationId} does not declare ${expected}`,
      );
      const seen = provoked.get(operationId) ?? new Set();
      provoked.set(operationId, seen.add(expected));
      scenariosRun++;
    });
  }
}

Deno.test("openapi declared: every declared answer is provoked above or out of reach", async (t) => {
  await using server = await startTestServer();
  const contract = await ApiContract.fetchFrom(server.url);
  assertEquals(
    Object.keys(SCENARIOS).sort(),
    contract.operations.map((o) => o.operationId).sort(),
    "one scenario list per operation of the document",
  );
  if (scenariosRun !== scenarioCount) {
    await t.step({ name: "(skipped: not every scenario ran)", ignore: true, fn: () => {} });
    return;
  }
  const unprovoked: string[] = [];
  for (const operation of contract.operations) {
    // A HEAD answer has no body, so its codes cannot be seen; its GET twin covers them.
    if (operation.method === "HEAD") continue;
    const seen = provoked.get(operation.operationId) ?? new Set();
    const excused = { ...OUT_OF_REACH["*"], ...OUT_OF_REACH[operation.operationId] };
    for (const status of contract.statuses(operation)) {
      const codes = contract.codes(operation, status);
      const answers = codes === null ? [String(status)] : codes.map((c) => `${status} ${c}`);
      for (const answer of answers) {
        if (!seen.has(answer) && !(answer in excused)) {
          unprovoked.push(`${operation.operationId}: ${answer}`);
        }
      }
    }
  }
  assertEquals(unprovoked, [], "declared, but neither provoked nor listed in OUT_OF_REACH");
});
