/**
 * createApp(deps) returns the fetch handler of the whole service. Nothing
 * here is module-level: tests build as many apps as they like, each with its
 * own temp directory, clock and caps.
 *
 * The pipeline for every request: OPTIONS preflight → route match (404/405)
 * → client address → handler (which asks the context for the caller) →
 * errors rendered as JSON → CORS headers → one log line.
 */
import { ApiError, errorResponse } from "../errors.ts";
import type { Authenticator, Caller } from "../auth/caller.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Records } from "../db/records.ts";
import { isDatabaseBusy } from "../db/database.ts";
import type { TokenRecords } from "../db/token_records.ts";
import type { TokenService } from "../auth/tokens.ts";
import { MIB } from "../limits/tiers.ts";
import { WindowLimit } from "../limits/window_limit.ts";
import { applyDeprecationHeaders, deprecationsHandler, usesQueryToken } from "./deprecation.ts";
import { createRevokeHandler, createTokenListHandler } from "./tokens.ts";
import { createFilesHandler } from "./files.ts";
import { createUsageHandler } from "./usage.ts";
import { createExtendDealHandler } from "./deals.ts";
import { createLimitsHandler } from "./limits.ts";
import { createComputePieceCidHandler, createPieceCidsInfoHandler } from "./piece_cids.ts";
import type { HashWorkerPool } from "../piece_cid/pool.ts";
import { createOpenApiHandler } from "./openapi.ts";
import { createSignupHandler } from "./signup.ts";
import { DealIdGenerator } from "../deal_id.ts";
import { DailyCapLedger } from "../limits/daily_caps.ts";
import type { Logger } from "../log.ts";
import { clientKeyOf, resolveClientAddress } from "../net/ip.ts";
import { PieceCatalog } from "../store/catalog.ts";
import { PieceDigests } from "../store/digests.ts";
import type { PieceStore } from "../store/driver.ts";
import { applyCorsHeaders, preflightResponse } from "./cors.ts";
import type { RequestContext } from "./context.ts";
import { createHealthHandler } from "./health.ts";
import type { DatabaseHealth } from "./health.ts";
import { createPieceHandler, serveCachedPiece } from "./pieces.ts";
import { InFlight } from "./in_flight.ts";
import { Router } from "./router.ts";
import type { Route, RouteMatch } from "./router.ts";
import { SmallPieceCache } from "./small_piece_cache.ts";
import { createUploadHandler } from "./upload.ts";

export interface AppDeps {
  config: Config;
  /** Public base URL without a trailing slash. */
  baseUrl: string;
  records: Records;
  store: PieceStore;
  clock: Clock;
  authenticator: Authenticator;
  tokens: TokenService;
  tokenRecords: TokenRecords;
  /** Workers that verify piece cids; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  logger: Logger;
  databaseHealth(): DatabaseHealth;
}

export interface App {
  fetch(request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Response | Promise<Response>;
  readonly routes: readonly Route[];
  readonly ledger: DailyCapLedger;
  /**
   * Stops accepting uploads and resolves once those in flight have finished,
   * or, after timeoutMs, once they have been aborted (temp files removed,
   * reservations released). Returns how many had to be aborted.
   */
  drainUploads(timeoutMs: number): Promise<{ aborted: number }>;
  /** Background work on stored pieces (their SHA-256); /healthz reports its backlog. */
  readonly digests: PieceDigests;
  /** Stops the app's timers and background work. */
  close(): Promise<void>;
}

/** How often the store's reachability is re-checked for the small-piece cache. */
const REACHABILITY_INTERVAL_MS = 1000;

export function createApp(deps: AppDeps): App {
  const digests = new PieceDigests({
    store: deps.store,
    records: deps.records,
    logger: deps.logger,
  });
  const resumed = digests.resume();
  if (resumed > 0) deps.logger.info("hashing pieces stored before the last stop", { resumed });
  const catalog = new PieceCatalog({
    store: deps.store,
    records: deps.records,
    clock: deps.clock,
    dealIds: new DealIdGenerator(deps.clock),
    digests,
  });
  const ledger = new DailyCapLedger({
    clock: deps.clock,
    usedBytes: (subject, day) => deps.records.usedBytes(subject, day),
  });
  const cache = new SmallPieceCache({
    maxPieceBytes: 64 * 1024,
    maxTotalBytes: deps.config.smallPieceCacheBytes,
  });
  // Cached pieces bypass the store, so keep a cheap answer to "is it still there?".
  let storeReachable = true;
  const probeStore = () =>
    deps.store.stat("reachabilityprobe").then(
      () => storeReachable = true,
      () => storeReachable = false,
    );
  const probeTimer = setInterval(probeStore, REACHABILITY_INTERVAL_MS);
  Deno.unrefTimer(probeTimer);
  const pieceRoute: Route = {
    method: "GET",
    path: "/p/:cid",
    handler: createPieceHandler({ ...deps, catalog, cache, storeReachable: () => storeReachable }),
  };
  const uploads = new InFlight();
  let draining = false;
  const uploadHandler = createUploadHandler({ ...deps, catalog, ledger });
  const signupLimit = new WindowLimit({
    limit: deps.config.signupsPerHour,
    windowMs: 3_600_000,
    clock: deps.clock,
  });
  const router = new Router([
    {
      method: "POST",
      path: "/api/upload",
      handler: (request, context) => {
        if (draining) {
          throw new ApiError("storage_offline", "Server is shutting down; retry shortly", {
            headers: { "retry-after": "5" },
          });
        }
        return uploads.track(async () => await uploadHandler(request, context));
      },
    },
    pieceRoute,
    {
      method: "POST",
      path: "/api/auth/signup",
      handler: createSignupHandler({
        tokens: deps.tokens,
        signupLimit,
        maxQuotaMb: Math.floor(deps.config.token.dailyCapBytes / MIB),
        databaseIsPersistent: deps.databaseHealth().persistent,
      }),
    },
    { method: "POST", path: "/api/tokens/revoke", handler: createRevokeHandler(deps) },
    { method: "GET", path: "/api/tokens", handler: createTokenListHandler(deps) },
    { method: "GET", path: "/api/files", handler: createFilesHandler(deps) },
    { method: "GET", path: "/api/usage", handler: createUsageHandler({ ...deps, ledger }) },
    {
      method: "POST",
      path: "/api/deals/:dealId/extend",
      handler: createExtendDealHandler(deps),
    },
    { method: "GET", path: "/api/limits", handler: createLimitsHandler({ ...deps, ledger }) },
    { method: "GET", path: "/api/piece-cids", handler: createPieceCidsInfoHandler(deps.config) },
    { method: "POST", path: "/api/piece-cids", handler: createComputePieceCidHandler(deps) },
    { method: "GET", path: "/healthz", handler: createHealthHandler({ ...deps, digests }) },
    { method: "GET", path: "/openapi.json", handler: createOpenApiHandler(deps.baseUrl) },
    { method: "GET", path: "/docs/deprecations", handler: deprecationsHandler },
  ]);
  const shutdown = new AbortController();

  const pieceDeps = { cache, storeReachable: () => storeReachable };

  /** Synchronous for cached pieces (no Promise per request); everything else goes on. */
  function fetch(
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ): Response | Promise<Response> {
    const started = performance.now();
    const cached = draining ? null : serveCachedPiece(request, pieceDeps);
    if (cached === null) return handle(request, info, started);
    if (deps.config.logRequests) {
      const ms = Math.round((performance.now() - started) * 100) / 100;
      const line = `"level":"info","msg":"request","method":"GET","route":"/p/:cid","status":200,` +
        `"ms":${ms},"cached":true`;
      if (deps.logger.raw) deps.logger.raw(line);
      else deps.logger.info("request", JSON.parse(`{${line}}`));
    }
    return cached;
  }

  async function handle(
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
    started: number,
  ): Promise<Response> {
    const url = new URL(request.url);
    const logFields: RequestContext["logFields"] = {};
    let routeName = "unmatched";
    let response: Response;
    try {
      response = await route(request, url, info, logFields, (name) => routeName = name);
    } catch (error) {
      response = renderError(error, request, routeName);
    }
    applyCorsHeaders(response.headers);
    if (usesQueryToken(request, url)) applyDeprecationHeaders(response.headers, deps.baseUrl);
    // While draining, no connection is kept alive: shutdown would otherwise wait for its client.
    if (draining) response.headers.set("connection", "close");
    if (deps.config.logRequests) {
      deps.logger.info("request", {
        method: request.method,
        route: routeName,
        status: response.status,
        ms: Math.round((performance.now() - started) * 100) / 100,
        ...logFields,
      });
    }
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
      return preflightResponse();
    }
    // Retrieval is the hot path: skip the route table for it.
    const pathname = url.pathname;
    const isRetrieval = (request.method === "GET" || request.method === "HEAD") &&
      pathname.startsWith("/p/") && pathname.indexOf("/", 3) === -1;
    const match: RouteMatch = isRetrieval
      ? { kind: "found", route: pieceRoute, params: { cid: pathname.slice(3) } }
      : router.match(request.method, pathname);
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
    let clientKey: string | null = null;
    const clientKeyOfRequest = () => {
      if (clientKey === null) {
        const address = resolveClientAddress(
          info.remoteAddr.hostname,
          request.headers.get("x-forwarded-for"),
          deps.config.trustedProxies,
        );
        clientKey = address ? clientKeyOf(address) : `peer:${info.remoteAddr.hostname}`;
      }
      return clientKey;
    };
    let caller: Promise<Caller> | null = null;
    const context: RequestContext = {
      url,
      params: match.params,
      get clientKey() {
        return clientKeyOfRequest();
      },
      signal: shutdown.signal,
      logFields,
      caller: () =>
        caller ??= deps.authenticator.authenticate(request, url).then((token) => {
          logFields.caller = token ? "token" : "sponsored";
          return token ?? { kind: "sponsored", clientKey: clientKeyOfRequest() };
        }),
    };
    const response = await match.route.handler(request, context);
    if (request.method === "HEAD" && response.body) {
      await response.body.cancel();
      return new Response(null, { status: response.status, headers: response.headers });
    }
    return response;
  }

  function renderError(error: unknown, request: Request, routeName: string): Response {
    if (error instanceof ApiError) {
      if (error.status >= 500) {
        deps.logger.error("request failed", {
          route: routeName,
          code: error.code,
          cause: String(error.cause ?? error.message),
        });
      }
      return errorResponse(error, request.method);
    }
    if (isDatabaseBusy(error)) {
      deps.logger.warn("database busy", { route: routeName });
      return errorResponse(
        new ApiError("storage_offline", "The database is busy; retry in a moment", {
          headers: { "retry-after": "1" },
        }),
        request.method,
      );
    }
    // Anything we did not anticipate is our bug: log it whole, answer 500, never 400.
    deps.logger.error("unhandled error", {
      route: routeName,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      stack: error instanceof Error ? error.stack : undefined,
    });
    return errorResponse(
      new ApiError("internal_error", "Internal server error"),
      request.method,
    );
  }

  return {
    fetch,
    routes: router.routes,
    ledger,
    digests,
    async close() {
      clearInterval(probeTimer);
      await digests.stop();
    },
    async drainUploads(timeoutMs) {
      draining = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finished = await Promise.race([
        uploads.idle().then(() => true),
        new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), timeoutMs)),
      ]);
      clearTimeout(timer);
      if (finished) return { aborted: 0 };
      const aborted = uploads.count;
      shutdown.abort(new Error("server shutting down"));
      await uploads.idle();
      return { aborted };
    },
  };
}
