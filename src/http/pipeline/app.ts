/**
 * createApp returns the fetch handler of the whole service: the request
 * pipeline, and nothing else. Every long-lived object it uses is made by the
 * composition root (server/) and passed in, so tests build as many apps as
 * they like, each with its own temp directory, clock and caps.
 *
 * The pipeline for every request: the fast path (a cached piece, answered
 * synchronously) → OPTIONS preflight → route match (404/405) → handler
 * (which asks the context for the caller) → errors rendered as JSON → CORS
 * headers → one log line → the answer counted for GET /metrics (when on).
 */
import type { MinBodyRate } from "../../kernel/streams/read_watchdog.ts";
import { ApiError, errorResponse } from "../../kernel/errors.ts";
import type { ErrorCode } from "../../kernel/errors.ts";
import type { Authenticator, Caller } from "../../auth/caller.ts";
import type { IpRange } from "../../net/ip.ts";
import type { Logger } from "../../kernel/log.ts";
import type { RequestMetrics } from "../../metrics/request_metrics.ts";
import { cameThroughTrustedProxy, resolveClientKey } from "../../net/ip.ts";
import { requireSameOrigin } from "../../auth/sessions.ts";
import { applyDeprecationHeaders, usesQueryToken } from "./deprecation.ts";
import { readJsonObject } from "./body.ts";
import { applyCorsHeaders, preflightResponse } from "./cors.ts";
import type { RequestContext } from "./context.ts";
import { apiErrorOf } from "./errors.ts";
import { createRequestLog } from "./request_log.ts";
import { Router } from "./router.ts";
import type { Route } from "./router.ts";
import type { UploadDrain } from "./upload_drain.ts";

export interface AppOptions {
  routes: readonly Route[];
  /** Tried before anything else; a Response ends the request there (see pieces.ts). */
  fastPath?: (request: Request) => Response | null;
  authenticator: Authenticator;
  /** Public base URL without a trailing slash (for Link headers). */
  baseUrl: string;
  /** Peers whose X-Forwarded-For is believed. */
  trustedProxies: readonly IpRange[];
  logger: Logger;
  /** One log line per request. */
  logRequests: boolean;
  /** A request body that sends nothing for this long is abandoned (408). */
  bodyIdleTimeoutMs: number;
  /** A request body slower than this on average is abandoned (408); null: no minimum. */
  bodyMinRate: MinBodyRate | null;
  /** Gives request contexts their abort signal; while it drains, no connection is kept alive. */
  uploadDrain: Pick<UploadDrain, "draining" | "signal">;
  /** Counts every answer for GET /metrics; null (--metrics false): nothing is counted. */
  metrics: RequestMetrics | null;
  /** Headers OPTIONS adds on a path beyond CORS's (tus protocol discovery), or null. */
  preflightExtras?: (pathname: string) => Record<string, string> | null;
}

export interface App {
  fetch(request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Response | Promise<Response>;
}

export function createApp(options: AppOptions): App {
  const router = new Router(options.routes);
  const log = createRequestLog(options.logger, options.logRequests);
  const { uploadDrain, metrics } = options;

  /** Synchronous for the fast path (no Promise per request); everything else goes on. */
  function fetch(
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ): Response | Promise<Response> {
    const started = performance.now();
    const fast = uploadDrain.draining ? null : options.fastPath?.(request) ?? null;
    if (fast === null) return handle(request, info, started);
    log.fastPath(started);
    metrics?.fastPathAnswered(started);
    return fast;
  }

  async function handle(
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
    started: number,
  ): Promise<Response> {
    // Deno builds request.url from the Host header, which a client may fill with anything.
    const url = URL.parse(request.url);
    const logFields: RequestContext["logFields"] = {};
    let routeName = "unmatched";
    let response: Response;
    let code: ErrorCode | null = null;
    try {
      if (url === null) throw new ApiError("invalid_request", "The Host header is not a host name");
      response = await route(request, url, info, logFields, (name) => routeName = name);
    } catch (error) {
      const apiError = apiErrorOf(error, routeName, options.logger);
      code = apiError.code;
      response = errorResponse(apiError, request.method);
    }
    applyCorsHeaders(response.headers);
    if (url !== null && usesQueryToken(request, url)) {
      applyDeprecationHeaders(response.headers, options.baseUrl);
    }
    // While draining, no connection is kept alive: shutdown would otherwise wait for its client.
    if (uploadDrain.draining) response.headers.set("connection", "close");
    log.request(request.method, routeName, response.status, started, logFields);
    metrics?.answered({
      method: request.method,
      route: routeName,
      status: response.status,
      code,
      started,
      logFields,
      requestHeaders: request.headers,
      responseHeaders: response.headers,
    });
    return response;
  }

  async function route(
    request: Request,
    url: URL,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
    logFields: RequestContext["logFields"],
    setRouteName: (name: string) => void,
  ): Promise<Response> {
    if (request.method === "OPTIONS") {
      setRouteName("preflight");
      return preflightResponse(options.preflightExtras?.(url.pathname) ?? {});
    }
    const match = router.match(request.method, url.pathname);
    if (match.kind === "not_found") {
      throw new ApiError("not_found", `No route for ${request.method} ${url.pathname}`);
    }
    if (match.kind === "method_not_allowed") {
      setRouteName(match.path);
      throw new ApiError("method_not_allowed", `${request.method} is not allowed here`, {
        headers: { allow: match.allow.join(", ") },
      });
    }
    setRouteName(match.route.path);
    const context = requestContextOf(
      request,
      { url, info, params: match.params, logFields },
      options,
    );
    const response = await match.route.handler(request, context);
    if (request.method === "HEAD" && response.body) {
      await response.body.cancel();
      return new Response(null, { status: response.status, headers: response.headers });
    }
    return response;
  }

  return { fetch };
}

/**
 * What the handler of a matched route gets besides the request: the caller
 * and the client's key are worked out on first use, and once.
 */
function requestContextOf(
  request: Request,
  { url, info, params, logFields }: {
    url: URL;
    info: Deno.ServeHandlerInfo<Deno.NetAddr>;
    params: Record<string, string>;
    logFields: RequestContext["logFields"];
  },
  options: AppOptions,
): RequestContext {
  let clientKey: string | null = null;
  const clientKeyOfRequest = () =>
    clientKey ??= resolveClientKey(
      info.remoteAddr.hostname,
      request.headers.get("x-forwarded-for"),
      options.trustedProxies,
    );
  let caller: Promise<Caller> | null = null;
  const ownOrigin = new URL(options.baseUrl).origin;
  return {
    url,
    params,
    get clientKey() {
      return clientKeyOfRequest();
    },
    get viaTrustedProxy() {
      return cameThroughTrustedProxy(
        info.remoteAddr.hostname,
        request.headers.get("x-forwarded-for"),
        options.trustedProxies,
      );
    },
    signal: options.uploadDrain.signal,
    bodyIdleTimeoutMs: options.bodyIdleTimeoutMs,
    bodyMinRate: options.bodyMinRate,
    readJson: () =>
      readJsonObject(request, {
        idleTimeoutMs: options.bodyIdleTimeoutMs,
        minRate: options.bodyMinRate,
      }),
    logFields,
    caller: () =>
      caller ??= options.authenticator.authenticate(request, url).then((token) => {
        // A cookie rides along with any request to this origin: changes need the page's own.
        if (token?.via === "cookie") requireSameOrigin(request, ownOrigin);
        logFields.caller = token ? (token.via === "cookie" ? "session" : "token") : "sponsored";
        return token ?? { kind: "sponsored", clientKey: clientKeyOfRequest() };
      }),
    callerStillValid: async () => {
      await options.authenticator.authenticate(request, url);
    },
  };
}
