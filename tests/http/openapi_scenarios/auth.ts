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
  postJson,
  tokenScenarios,
  WALLET_ARGS,
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

export const scenarios: Record<string, Scenario[]> = {
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
