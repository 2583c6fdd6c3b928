/**
 * GET, POST and DELETE /api/auth/session — the web page's cookie session
 * (auth/sessions.ts has the rules).
 *
 * POST takes `{token}` and answers 201 with who the token is, setting the
 * `__Host-storage_session` cookie; the token itself is never in the answer
 * nor in the cookie. DELETE ends the request's session and removes the
 * cookie (200 signed out, also when there was none). Both change what a browser sends
 * from then on, so both must come from the service's own page (403
 * csrf_rejected). GET says who a request acts as, by whatever credentials it
 * carries: the page asks it on load, since no script of it can see the cookie.
 */
import { ApiError } from "../../kernel/errors.ts";
import { toRfc3339 } from "../../kernel/clock.ts";
import type { Caller } from "../../auth/caller.ts";
import { sessionCookieOf } from "../../auth/credentials.ts";
import {
  endedSessionCookie,
  requireSameOrigin,
  sessionCookie,
  type SessionService,
} from "../../auth/sessions.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { SessionInfo } from "../../kernel/wire.ts";

export interface SessionDeps {
  sessions: SessionService;
  /** Public base URL without a trailing slash: its origin is the page's. */
  baseUrl: string;
}

export function createSessionInfoHandler(): Handler {
  return async (_request, context) => jsonResponse(200, sessionInfoOf(await context.caller()));
}

export function createSessionStartHandler(deps: SessionDeps): Handler {
  const origin = new URL(deps.baseUrl).origin;
  return async (request, context) => {
    requireSameOrigin(request, origin);
    const { token } = await context.readJson();
    if (typeof token !== "string" || token === "") {
      throw new ApiError("invalid_request", "token (the token to sign in with) is required");
    }
    const { secret, caller } = await deps.sessions.start(token);
    context.logFields.caller = "session";
    return jsonResponse(201, sessionInfoOf(caller), { "set-cookie": sessionCookie(secret) });
  };
}

export function createSessionEndHandler(deps: SessionDeps): Handler {
  const origin = new URL(deps.baseUrl).origin;
  return async (request) => {
    requireSameOrigin(request, origin);
    const secret = sessionCookieOf(request);
    if (secret !== null) await deps.sessions.end(secret);
    return jsonResponse(200, sessionInfoOf(SIGNED_OUT), { "set-cookie": endedSessionCookie() });
  };
}

const SIGNED_OUT: Caller = { kind: "sponsored", clientKey: "" };

function sessionInfoOf(caller: Caller): SessionInfo {
  if (caller.kind === "sponsored") {
    return {
      signedIn: false,
      via: null,
      userId: null,
      email: null,
      wallet: null,
      scopes: [],
      quotaMb: null,
      expiresAt: null,
      jti: null,
    };
  }
  const { account } = caller;
  return {
    signedIn: true,
    // A signed link's caller never reaches this endpoint: links only upload.
    via: caller.via === "link" ? null : caller.via,
    userId: caller.sub,
    email: account.kind === "email" ? account.email : null,
    wallet: account.kind === "wallet" ? account.address : null,
    scopes: [...caller.scopes],
    quotaMb: account.kind === "email" ? account.quotaMb : null,
    expiresAt: toRfc3339(caller.exp * 1000),
    jti: caller.jti,
  };
}
