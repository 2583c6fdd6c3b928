/**
 * What the declared-codes test (tests/http/openapi_declared_codes_test.ts) is made
 * of: a Scenario provokes one answer of one operation from outside, against a
 * real server started with the scenario's flags; below it, the requests and
 * setups several areas' scenarios share. Each area's scenarios are in a file
 * of this folder (uploads.ts, retrieval.ts, auth.ts, account.ts, service.ts);
 * mod.ts puts them together.
 */
import { assertEquals } from "../../helpers/assert.ts";
import { jtiOf } from "../../helpers/server.ts";
import { deadRpcUrl, devKey, signedMessage, walletArgs } from "../../helpers/wallet.ts";
import type { Answer, Probe, SendInit } from "../openapi_probe.ts";

export interface Scenario {
  name: string;
  /** Flags of the scenario's own server. */
  args?: string[];
  send(probe: Probe): Promise<Answer>;
  status: number;
  /** The JSON error code expected; omitted for answers without one (successes, HEAD). */
  code?: string;
}

/**
 * Declared answers no scenario provokes, and why, by operation. Keys are
 * "status code" as the coverage test spells them.
 */
export type OutOfReach = Record<string, Record<string, string>>;

export const CID = "bafkscenario01";
export const JSON_HEADERS = { "content-type": "application/json" };
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A raw POST with the given extra header lines, e.g. for a body cut short. */
export const rawPost = (path: string, headers: string) =>
  `POST ${path} HTTP/1.1\nHost: x\nConnection: close\n${headers}`;

export const postJson = (
  p: Probe,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  p.send("POST", path, {
    headers: { ...JSON_HEADERS, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

/** A new user's token, revoked. */
export async function revokedToken(p: Probe): Promise<string> {
  const token = await p.token();
  const revoked = await postJson(p, "/api/tokens/revoke", { jti: jtiOf(token) }, bearer(token));
  assertEquals(revoked.status, 200, revoked.body);
  return token;
}

/** Scenarios shared by every route that needs a token with a scope. */
export function tokenScenarios(
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
      send: async (p) => p.send(method, path, init(p, bearer(await revokedToken(p)))),
      status: 401,
      code: "revoked_token",
    },
  ];
  if (method !== "GET" && method !== "HEAD") scenarios.push(crossOriginSession(method, path, init));
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

/** The cookie header of a new user's session, started from the server's own page. */
export async function sessionCookie(p: Probe, token?: string): Promise<string> {
  const answer = await postJson(p, "/api/auth/session", { token: token ?? await p.token() }, {
    origin: p.server.url,
  });
  assertEquals(answer.status, 201, answer.body);
  return answer.headers.get("set-cookie")!.split(";")[0];
}

/** A change signed in by the session cookie alone, sent from another origin. */
function crossOriginSession(
  method: string,
  path: string,
  init: (p: Probe, headers: Record<string, string>) => SendInit,
): Scenario {
  return {
    name: "the session cookie alone, from another origin",
    send: async (p) =>
      p.send(
        method,
        path,
        init(p, { cookie: await sessionCookie(p), origin: "https://x.example" }),
      ),
    status: 403,
    code: "csrf_rejected",
  };
}

/**
 * What every route that reads a JSON body answers to a bad one; withToken
 * for routes that check the caller's token before they read the body.
 */
export function jsonBodyScenarios(
  path: string,
  options: { args?: string[]; withToken?: boolean; sameOrigin?: boolean } = {},
): Scenario[] {
  const args = options.args ?? [];
  const authorization = async (p: Probe) =>
    (options.withToken ? `Authorization: Bearer ${await p.token()}\n` : "") +
    (options.sameOrigin ? `Origin: ${p.server.url}\n` : "");
  const auth = async (p: Probe): Promise<Record<string, string>> => ({
    ...(options.withToken ? bearer(await p.token()) : {}),
    ...(options.sameOrigin ? { origin: p.server.url } : {}),
  });
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

/** What a request() scenario needs besides its request line. */
export interface RequestOptions {
  /** Flags of the scenario's own server. */
  args?: string[];
  /** Sent with a fresh token of every scope (a new user's own). */
  token?: boolean;
  headers?: Record<string, string>;
}

/**
 * The most common scenario, one request without a body, in a line: the
 * request as "METHOD /path" and the answer as the test names it, "status" or
 * "status code", e.g. request("limit=0", "GET /api/files?limit=0", * "400 invalid_request", { token: true }).
 */
export function request(
  name: string,
  requestLine: string,
  answer: string,
  { args, token, headers }: RequestOptions = {},
): Scenario {
  const [method, path] = requestLine.split(" ");
  return {
    name,
    args,
    send: async (p) =>
      p.send(method, path, { headers: { ...headers, ...(token ? bearer(await p.token()) : {}) } }),
    ...expecting(answer),
  };
}

/** A POST of a JSON body, in a line like request(): the path, the body, the answer expected. */
export function posted(
  name: string,
  path: string,
  body: unknown,
  answer: string,
  { args }: { args?: string[] } = {},
): Scenario {
  return { name, args, send: (p) => postJson(p, path, body), ...expecting(answer) };
}

/** A scenario that first stores `first` under CID (answered 200), then sends what it tests. */
export function afterStoring(
  name: string,
  first: string,
  send: (p: Probe) => Promise<Answer>,
  answer: string,
): Scenario {
  return {
    name,
    send: async (p) => {
      assertEquals((await p.upload(CID, first)).status, 200);
      return send(p);
    },
    ...expecting(answer),
  };
}

/** "status" or "status code", as the test names an answer, as a Scenario's fields. */
export function expecting(answer: string): { status: number; code?: string } {
  const [status, code] = answer.split(" ");
  return { status: Number(status), code };
}

/** request() with a fresh token of every scope (a new user's own). */
export function withToken(
  name: string,
  requestLine: string,
  answer: string,
  options: RequestOptions = {},
): Scenario {
  return request(name, requestLine, answer, { ...options, token: true });
}

export function wrongMethod(method: string, path: string): Scenario {
  return {
    name: `${method} on a path that does not serve it`,
    send: (p) => p.send(method, path),
    status: 405,
    code: method === "HEAD" ? undefined : "method_not_allowed",
  };
}

/**
 * A wallet tier whose chain is down: sign-in still works (a key's signature is
 * checked without the chain), anything that needs a balance answers 503.
 */
export const WALLET_ARGS = walletArgs(deadRpcUrl());

/** A wallet token from the probe's server (which must run with WALLET_ARGS). */
export async function walletToken(p: Probe): Promise<string> {
  const signed = await signedMessage(p.server.url, devKey(1));
  const answer = await postJson(p, "/api/auth/wallet", signed);
  assertEquals(answer.status, 201, answer.body);
  return JSON.parse(answer.body).token;
}

/**
 * A wallet token's request on a server whose chain cannot be reached: sent by
 * `send`, or, without a body, given as "METHOD /path".
 */
export function chainDown(
  name: string,
  send: string | ((p: Probe, auth: Record<string, string>) => Promise<Answer>),
) {
  const [method, path] = typeof send === "string" ? send.split(" ") : [];
  const sent = typeof send === "string"
    ? (p: Probe, headers: Record<string, string>) => p.send(method, path, { headers })
    : send;
  return {
    name,
    args: WALLET_ARGS,
    send: async (p: Probe) => sent(p, bearer(await walletToken(p))),
    status: 503,
    code: "wallet_unavailable",
  };
}

/** A new user's deal: its token's headers and the deal's id. */
export async function ownDeal(p: Probe): Promise<{ auth: Record<string, string>; dealId: string }> {
  const auth = bearer(await p.token());
  const upload = await p.upload(CID, "mine", { headers: auth });
  assertEquals(upload.status, 200, upload.body);
  return { auth, dealId: JSON.parse(upload.body).dealId };
}

/**
 * A piece a sweep removed: its only deal deleted, then the server's own
 * sweep judged as at 30 days on (past any grace period). Returns the owner's
 * headers and the deal.
 */
export async function removedPiece(
  p: Probe,
): Promise<{ auth: Record<string, string>; dealId: string }> {
  const { auth, dealId } = await ownDeal(p);
  const deleted = await p.send("DELETE", `/api/deals/${dealId}`, { headers: auth });
  assertEquals(deleted.status, 200, deleted.body);
  const report = await p.server.server.gc.sweep({ asOf: Date.now() + 30 * 86_400_000 });
  assertEquals(report?.removedPieces, 1);
  return { auth, dealId };
}
