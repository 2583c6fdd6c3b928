/**
 * Declared-codes scenarios (see scenario.ts) of signup (open and verify),
 * wallet sign-in, and the caller's tokens.
 */
import { assertEquals } from "../../helpers/assert.ts";
import { jtiOf } from "../../helpers/server.ts";
import { devKey, signedMessage } from "../../helpers/wallet.ts";
import {
  bearer,
  JSON_HEADERS,
  jsonBodyScenarios,
  posted,
  postJson,
  request,
  revokedToken,
  sessionCookie,
  tokenScenarios,
  WALLET_ARGS,
  withToken,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** An SMTP URL nothing listens on: a port taken from the OS and given back at once. */
const DEAD_SMTP_URL = (() => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return `smtp://127.0.0.1:${port}`;
})();

/** The signup every scenario varies: an e-mail and a label. */
const A_USER = { email: "a@b.co", label: "x" };

const signup = (name: string, body: unknown, answer: string, options?: { args?: string[] }) =>
  posted(name, "/api/auth/signup", body, answer, options);

/** A POST /api/auth/signup/verify for A_USER's e-mail, with `code` (none when undefined). */
const verify = (
  name: string,
  code: string | undefined,
  answer: string,
  options?: { args?: string[] },
) => posted(name, "/api/auth/signup/verify", { email: A_USER.email, code }, answer, options);

export const scenarios: Record<string, Scenario[]> = {
  signup: [
    signup("an e-mail and a label", A_USER, "201"),
    signup("an e-mail without @", { ...A_USER, email: "nobody" }, "400 invalid_email"),
    signup("an empty label", { ...A_USER, label: "" }, "400 invalid_label"),
    signup("an unknown scope", { ...A_USER, scopes: ["x"] }, "400 invalid_scopes"),
    signup("a zero quota", { ...A_USER, quotaMb: 0 }, "400 invalid_quota"),
    {
      name: "a second signup past --signup-limit 1",
      args: ["--signup-limit", "1"],
      send: async (p) => {
        await p.token();
        return postJson(p, "/api/auth/signup", A_USER);
      },
      status: 429,
      code: "rate_limited",
    },
    signup("no storage bound", A_USER, "503 storage_offline", { args: ["--data-dir", ""] }),
    signup("--signup closed", A_USER, "403 signup_closed", { args: ["--signup", "closed"] }),
    signup("--signup verify with a mail server that is not there", A_USER, "503 mail_unavailable", {
      args: ["--signup", "verify", "--smtp-url", DEAD_SMTP_URL, "--mail-from", "s@example.org"],
    }),
    wrongMethod("GET", "/api/auth/signup"),
    ...jsonBodyScenarios("/api/auth/signup"),
  ],
  verifySignup: [
    verify("a code when none was sent (--signup open)", "12345678", "400 invalid_code"),
    verify("no code", undefined, "400 invalid_request"),
    verify("--signup closed", "1", "403 signup_closed", { args: ["--signup", "closed"] }),
    wrongMethod("GET", "/api/auth/signup/verify"),
    ...jsonBodyScenarios("/api/auth/signup/verify"),
  ],
  getWalletNonce: [
    request("a server with a wallet tier", "GET /api/auth/wallet/nonce", "200", {
      args: WALLET_ARGS,
    }),
    request("a server without one", "GET /api/auth/wallet/nonce", "503 wallet_unavailable"),
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
    posted(
      "a message that is not a string",
      "/api/auth/wallet",
      { message: 1, signature: "0x00" },
      "400 invalid_request",
      { args: WALLET_ARGS },
    ),
    ...jsonBodyScenarios("/api/auth/wallet", { args: WALLET_ARGS }),
    posted("a server without a wallet tier", "/api/auth/wallet", {
      message: "x",
      signature: "0x00",
    }, "503 wallet_unavailable"),
    wrongMethod("GET", "/api/auth/wallet"),
  ],
  getJwks: [
    request("--token-alg RS256", "GET /.well-known/jwks.json", "200", {
      args: ["--token-alg", "RS256"],
    }),
    request("HS256, the default: no public keys", "GET /.well-known/jwks.json", "404 not_found"),
    wrongMethod("POST", "/.well-known/jwks.json"),
  ],
  headJwks: [
    request("--token-alg RS256", "HEAD /.well-known/jwks.json", "200", {
      args: ["--token-alg", "RS256"],
    }),
  ],
  getSession: [
    request("no credentials", "GET /api/auth/session", "200"),
    withToken("a bearer token", "GET /api/auth/session", "200"),
    {
      name: "a session cookie",
      send: async (p) =>
        p.send("GET", "/api/auth/session", { headers: { cookie: await sessionCookie(p) } }),
      status: 200,
    },
    ...tokenScenarios("GET", "/api/auth/session").filter((s) => s.name !== "no token"),
    {
      name: "a cookie whose session has ended",
      send: (p) =>
        p.send("GET", "/api/auth/session", {
          headers: { cookie: `__Host-storage_session=${"A".repeat(43)}` },
        }),
      status: 401,
      code: "invalid_token",
    },
    wrongMethod("PATCH", "/api/auth/session"),
  ],
  headSession: [request("no credentials", "HEAD /api/auth/session", "200")],
  startSession: [
    {
      name: "a token, from the server's own page",
      send: async (p) =>
        postJson(p, "/api/auth/session", { token: await p.token() }, { origin: p.server.url }),
      status: 201,
    },
    {
      name: "a token, from another origin",
      send: async (p) =>
        postJson(p, "/api/auth/session", { token: await p.token() }, {
          origin: "https://x.example",
        }),
      status: 403,
      code: "csrf_rejected",
    },
    {
      name: "no token",
      send: (p) => postJson(p, "/api/auth/session", {}, { origin: p.server.url }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "a garbage token",
      send: (p) =>
        postJson(p, "/api/auth/session", { token: "pk_live_a.b.c" }, { origin: p.server.url }),
      status: 401,
      code: "invalid_token",
    },
    {
      name: "a revoked token",
      send: async (p) =>
        postJson(p, "/api/auth/session", { token: await revokedToken(p) }, {
          origin: p.server.url,
        }),
      status: 401,
      code: "revoked_token",
    },
    wrongMethod("PATCH", "/api/auth/session"),
    ...jsonBodyScenarios("/api/auth/session", { sameOrigin: true }),
  ],
  endSession: [
    {
      name: "a session cookie, from the server's own page",
      send: async (p) =>
        p.send("DELETE", "/api/auth/session", {
          headers: { cookie: await sessionCookie(p), origin: p.server.url },
        }),
      status: 200,
    },
    {
      name: "a session cookie, from another origin",
      send: async (p) =>
        p.send("DELETE", "/api/auth/session", {
          headers: { cookie: await sessionCookie(p), origin: "https://x.example" },
        }),
      status: 403,
      code: "csrf_rejected",
    },
    wrongMethod("PATCH", "/api/auth/session"),
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
    withToken("a token with the list scope", "GET /api/tokens", "200"),
    ...tokenScenarios("GET", "/api/tokens", { scope: "list" }),
    wrongMethod("POST", "/api/tokens"),
  ],
  headListTokens: [
    withToken("a token with the list scope", "HEAD /api/tokens", "200"),
    request("no token", "HEAD /api/tokens", "401"),
  ],
};

export const outOfReach: OutOfReach = {
  signup: {
    "202": "needs a mail server that takes the code: tests/auth/signup_modes_test.ts runs one",
  },
  verifySignup: {
    "201": "needs the code from a delivered mail: tests/auth/signup_modes_test.ts reads it",
    "503 storage_offline": "a code is only ever sent by a server with its database",
  },
};
