/**
 * The route table of the whole service: each row is a method, a path, the
 * handler built from the services the composition root (server.ts) made, and
 * the row's API documentation. /openapi.json is generated from these rows.
 */
import type { TokenService } from "../auth/tokens.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { CatalogRecords } from "../db/catalog_records.ts";
import type { TokenRecords } from "../db/token_records.ts";
import { ApiError } from "../errors.ts";
import type { DailyCapLedger } from "../limits/daily_caps.ts";
import { MIB } from "../limits/tiers.ts";
import type { WindowLimit } from "../limits/window_limit.ts";
import type { HashWorkerPool } from "../piece_cid/pool.ts";
import type { PieceCatalog } from "../storage/catalog.ts";
import type { PieceDigests } from "../storage/digests.ts";
import type { PieceStore } from "../storage/driver/driver.ts";
import { createExtendDealHandler } from "./deals.ts";
import { deprecationsHandler } from "./deprecation.ts";
import { createFilesHandler } from "./files.ts";
import { createHealthHandler } from "./health.ts";
import type { DatabaseHealth } from "./health.ts";
import { createLimitsHandler } from "./limits.ts";
import { createOpenApiHandler } from "./openapi.ts";
import { createComputePieceCidHandler, createPieceCidsInfoHandler } from "./piece_cids.ts";
import { RETRIEVAL_PATH } from "./pieces.ts";
import type { Retrieval } from "./pieces.ts";
import type { Route } from "./router.ts";
import { createSignupHandler } from "./signup.ts";
import { createRevokeHandler, createTokenListHandler } from "./tokens.ts";
import type { UploadDrain } from "./upload_drain.ts";
import { createUploadHandler } from "./upload.ts";
import { createUsageHandler } from "./usage.ts";

/** The long-lived objects handlers use; all constructed by server.ts. */
export interface RouteServices {
  config: Config;
  /** Public base URL without a trailing slash. */
  baseUrl: string;
  clock: Clock;
  store: PieceStore;
  records: CatalogRecords;
  tokenRecords: TokenRecords;
  tokens: TokenService;
  catalog: PieceCatalog;
  digests: PieceDigests;
  ledger: DailyCapLedger;
  /** Workers that verify piece cids; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  retrieval: Retrieval;
  signupLimit: WindowLimit;
  uploadDrain: UploadDrain;
  databaseHealth(): DatabaseHealth;
}

/** Codes of any route that reads the caller's token. */
const TOKEN_ERRORS = ["invalid_token", "revoked_token"] as const;
/** Codes of any route that reads a JSON body. */
const JSON_BODY_ERRORS = [
  "invalid_json",
  "too_large",
  "incomplete_body",
  "request_timeout",
] as const;

export function createRoutes(services: RouteServices): Route[] {
  const upload = createUploadHandler(services);
  const routes: Route[] = [
    {
      method: "POST",
      path: "/api/upload",
      handler: (request, context) => {
        if (services.uploadDrain.draining) {
          throw new ApiError("storage_offline", "Server is shutting down; retry shortly", {
            headers: { "retry-after": "5" },
          });
        }
        return services.uploadDrain.track(async () => await upload(request, context));
      },
      doc: {
        operationId: "upload",
        summary: "Stage a file under its cid (sponsored without a token)",
        auth: "optional",
        scope: "put",
        errors: [
          "invalid_cid",
          ...TOKEN_ERRORS,
          "insufficient_scope",
          "no_body",
          "empty_bodyy",
          "length_required",
          "invalid_content_type",
          "invalid_filename",
          "cid_mismatch",
          "too_large",
          "rate_limited",
          "quota_exceeded",
          "incomplete_body",
          "request_timeout",
          "cid_conflict",
          "stage_failed",
          "storage_offline",
          "insufficient_storage",
        ],
      },
    },
    {
      method: "GET",
      path: RETRIEVAL_PATH,
      handler: services.retrieval.handler,
      doc: {
        operationId: "getPiece",
        summary: "Retrieve a piece's bytes (public)",
        auth: "public",
        errors: ["invalid_cid", "not_found", "storage_offline"],
      },
    },
    {
      method: "POST",
      path: "/api/auth/signup",
      handler: createSignupHandler({
        tokens: services.tokens,
        signupLimit: services.signupLimit,
        maxQuotaMb: Math.floor(services.config.token.dailyCapBytes / MIB),
        databaseIsPersistent: services.databaseHealth().persistent,
      }),
      doc: {
        operationId: "signup",
        summary: "Mint a token for an e-mail address",
        auth: "public",
        errors: [
          ...JSON_BODY_ERRORS,
          "invalid_email",
          "invalid_label",
          "invalid_scopes",
          "invalid_quota",
          "rate_limited",
          "storage_offline",
        ],
      },
    },
    {
      method: "POST",
      path: "/api/tokens/revoke",
      handler: createRevokeHandler(services),
      doc: {
        operationId: "revokeToken",
        summary: "Revoke a token by its jti",
        auth: "token",
        errors: [
          ...TOKEN_ERRORS,
          ...JSON_BODY_ERRORS,
          "invalid_request",
          "insufficient_scope",
          "not_found",
        ],
      },
    },
    {
      method: "GET",
      path: "/api/tokens",
      handler: createTokenListHandler(services),
      doc: {
        operationId: "listTokens",
        summary: "List the caller's tokens (metadata only)",
        auth: "token",
        scope: "list",
        errors: [...TOKEN_ERRORS, "insufficient_scope"],
      },
    },
    {
      method: "GET",
      path: "/api/files",
      handler: createFilesHandler(services),
      doc: {
        operationId: "listFiles",
        summary: "List the caller's uploads, newest first",
        auth: "token",
        scope: "list",
        errors: [...TOKEN_ERRORS, "insufficient_scope", "invalid_request"],
      },
    },
    {
      method: "GET",
      path: "/api/usage",
      handler: createUsageHandler(services),
      doc: {
        operationId: "getUsage",
        summary: "The caller's uploads per UTC day and today's quota",
        auth: "token",
        scope: "list",
        errors: [...TOKEN_ERRORS, "insufficient_scope", "invalid_request"],
      },
    },
    {
      method: "POST",
      path: "/api/deals/:dealId/extend",
      handler: createExtendDealHandler(services),
      doc: {
        operationId: "extendDeal",
        summary: "Extend a deal's term by one term of its tier",
        auth: "token",
        scope: "pin",
        errors: [...TOKEN_ERRORS, "insufficient_scope", "not_found"],
      },
    },
    {
      method: "GET",
      path: "/api/limits",
      handler: createLimitsHandler(services),
      doc: {
        operationId: "getLimits",
        summary: "The caller's tier, caps and what is left today",
        auth: "optional",
        errors: [...TOKEN_ERRORS, "invalid_request"],
      },
    },
    {
      method: "GET",
      path: "/api/piece-cids",
      handler: createPieceCidsInfoHandler(services.config),
      doc: {
        operationId: "describePieceCids",
        summary: "Which cid forms the server verifies and how to compute them",
        auth: "public",
        errors: [],
      },
    },
    {
      method: "POST",
      path: "/api/piece-cids",
      handler: createComputePieceCidHandler(services),
      doc: {
        operationId: "computePieceCid",
        summary: "Compute the PieceCIDv2 of a body without storing it",
        auth: "token",
        scope: "put",
        errors: [
          ...TOKEN_ERRORS,
          "insufficient_scope",
          "no_body",
          "empty_bodyy",
          "length_required",
          "too_large",
          "incomplete_body",
          "request_timeout",
        ],
      },
    },
    {
      method: "GET",
      path: "/healthz",
      handler: createHealthHandler(services),
      doc: {
        operationId: "getHealth",
        summary: "Whether storage and database can be used",
        auth: "public",
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/docs/deprecations",
      handler: deprecationsHandler,
      doc: {
        operationId: "listDeprecations",
        summary: "Features that will be removed, and what to use instead",
        auth: "public",
        errors: [],
      },
    },
  ];
  // The document describes every row, itself included.
  routes.push({
    method: "GET",
    path: "/openapi.json",
    handler: createOpenApiHandler(services.baseUrl),
    doc: {
      operationId: "getOpenApi",
      summary: "This API as an OpenAPI 3.1 document",
      auth: "public",
      errors: [],
    },
  });
  return routes;
}
