/**
 * The route table of the whole service: each row is a method, a path, the
 * handler built from the services the composition root (server/) made, and
 * the row's API documentation. /openapi.json is generated from these rows.
 */
import type { SignupVerification } from "../auth/signup_verification.ts";
import type { WalletSignIn } from "../auth/wallet_sign_in.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config/mod.ts";
import type { CatalogRecords, TokenRecords } from "../db/records.ts";
import { ApiError } from "../errors.ts";
import type { CapLedger } from "../limits/daily_caps.ts";
import type { UploadAdmission } from "../limits/upload_admission.ts";
import { MIB } from "../limits/tiers.ts";
import type { UploadPolicies } from "../limits/tiers.ts";
import type { WindowLimit } from "../limits/window_limit.ts";
import type { ServiceMetrics } from "../metrics/service_metrics.ts";
import type { HashWorkerPool } from "../piece_cid/pool.ts";
import type { PieceCatalog } from "../storage/catalog.ts";
import type { PieceDigests } from "../storage/digests.ts";
import type { PieceStore } from "../storage/driver/driver.ts";
import { createExtendDealHandler } from "./deals.ts";
import { deprecationsHandler } from "./deprecation.ts";
import { createFilesHandler } from "./files.ts";
import { createHealthHandler } from "./health.ts";
import { createLimitsHandler } from "./limits.ts";
import { createMetricsHandler } from "./metrics.ts";
import { createOpenApiHandler } from "./openapi.ts";
import { createComputePieceCidHandler, createPieceCidsInfoHandler } from "./piece_cids.ts";
import { RETRIEVAL_PATH } from "./pieces.ts";
import type { Retrieval } from "./pieces.ts";
import type { ParameterDoc, SuccessDoc } from "./route_doc.ts";
import type { Route } from "./router.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { dateSchema, integerSchema, stringSchema } from "./schemas/json_schema.ts";
import { createSignupHandler, createSignupVerifyHandler } from "./signup.ts";
import type { SignupDeps } from "./signup.ts";
import { createRevokeHandler, createTokenListHandler } from "./tokens.ts";
import type { UploadDrain } from "./upload_drain.ts";
import { createUploadHandler } from "./upload.ts";
import { createUsageHandler } from "./usage.ts";
import { createWalletNonceHandler, createWalletSignInHandler } from "./wallet.ts";
import { createWebHandlers } from "./web.ts";
import type { WalletChain } from "../wallet/chain.ts";
import type { DatabaseHealth } from "../wire.ts";

/** The long-lived objects handlers use; all constructed by server/services.ts. */
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
  ledger: CapLedger;
  /** Each caller's tier and caps (a wallet's from its balance). */
  policies: UploadPolicies;
  admission: UploadAdmission;
  /** Workers that verify piece cids; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  retrieval: Retrieval;
  signupLimit: WindowLimit;
  /** Mails and redeems signup codes; null unless --signup verify. */
  signupVerification: SignupVerification | null;
  /** The wallet tier's chain and sign-in; null without --wallet-rpc-url. */
  walletChain: WalletChain | null;
  walletSignIn: WalletSignIn | null;
  /** Sign-in nonces per client IP per hour. */
  walletNonceLimit: WindowLimit;
  uploadDrain: UploadDrain;
  databaseHealth(): Promise<DatabaseHealth>;
  /** False when tokens cannot be kept (an in-memory database: no data directory bound). */
  databasePersistent: boolean;
  /** What GET /metrics renders; null with --metrics false. */
  metrics: ServiceMetrics | null;
}

/** The upload route (also how the metrics tell uploads from other answers). */
export const UPLOAD_PATH = "/api/upload";

/** The cid format of every endpoint (cid_format.ts). */
const CID_SCHEMA = { ...stringSchema, pattern: "^[a-zA-Z0-9]{8,80}$" };
const CID_DESCRIPTION = "8 to 80 letters or digits, any case (see GET /api/piece-cids)";

/** The caller's daily cap, sent by uploads, accepted or refused at the cap. */
const RATE_LIMIT_HEADERS: HeaderUse = { RateLimit: "always", "RateLimit-Policy": "always" };

/** What a retrieval answer carries besides its body (pieces.ts). */
const PIECE_HEADERS: HeaderUse = {
  "Content-Type": "always",
  "Content-Length": "always",
  "Content-Disposition": "always",
  "Cache-Control": "always",
  ETag: "always",
  "Accept-Ranges": "always",
  "X-Service-Piece-Cid": "always",
  "X-Service-Source": "always",
  "X-Content-Type-Options": "always",
  "Content-Security-Policy": "always",
};
const { "Content-Length": _noLengthWithoutBody, ...NOT_MODIFIED_HEADERS } = PIECE_HEADERS;

const RETRIEVAL_PARAMETERS: ParameterDoc[] = [
  { name: "cid", in: "path", description: CID_DESCRIPTION, schema: CID_SCHEMA },
  {
    name: "If-None-Match",
    in: "header",
    description: "An ETag of an earlier answer (or *): a match answers 304 without a body",
    schema: stringSchema,
  },
];

const RETRIEVAL_RESPONSES: SuccessDoc[] = [
  {
    status: 200,
    description: "The stored bytes, with the Content-Type given at upload",
    body: { binary: true },
    headers: PIECE_HEADERS,
  },
  {
    status: 304,
    description: "Not modified: If-None-Match named this piece's ETag",
    headers: NOT_MODIFIED_HEADERS,
  },
];

/** The web page's files revalidate by ETag. */
const WEB_IF_NONE_MATCH: ParameterDoc = {
  name: "If-None-Match",
  in: "header",
  description: "The ETag of an earlier answer: a match answers 304 without a body",
  schema: stringSchema,
};
const WEB_RESPONSES: SuccessDoc[] = [
  {
    status: 200,
    description: "The file",
    body: { binary: true },
    headers: { "X-Content-Type-Options": "always" },
  },
  {
    status: 304,
    description: "Not modified: If-None-Match named this file's ETag",
    headers: { "X-Content-Type-Options": "always" },
  },
];

/** What POST bodies of bytes need, said where a client reads the request body's doc. */
const BYTES_BODY_FRAMING = "Sent with a Content-Length, which every HTTP client sets from the " +
  "body (chunked transfer-encoding is refused with 411 length_required; 0 bytes with 400 " +
  "empty_bodyy).";

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
  const signup: SignupDeps = {
    mode: services.config.signup,
    tokens: services.tokens,
    verification: services.signupVerification,
    signupLimit: services.signupLimit,
    maxQuotaMb: Math.floor(services.config.token.dailyCapBytes / MIB),
    databaseIsPersistent: services.databasePersistent,
  };
  const upload = createUploadHandler(services);
  const web = createWebHandlers();
  const wallet = {
    signIn: services.walletSignIn,
    nonceLimit: services.walletNonceLimit,
    databaseIsPersistent: signup.databaseIsPersistent,
  };
  const routes: Route[] = [
    {
      method: "POST",
      path: UPLOAD_PATH,
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
        description: "PieceCIDv2, PieceCIDv1 and sha2-256 CIDv1 cids are checked against the " +
          "bytes; other cids are stored as given unless the server requires verifiable cids. " +
          "Size and caps are decided from Content-Length before a byte is read. Bytes under " +
          "a stored cid never change: the same bytes again answer 200, others 409.",
        auth: "optional",
        scope: "put",
        parameters: [
          {
            name: "cid",
            in: "query",
            required: true,
            description: CID_DESCRIPTION,
            schema: CID_SCHEMA,
          },
          {
            name: "X-Filename",
            in: "header",
            description: "The file's name, URL-encoded UTF-8, at most 255 bytes decoded, no " +
              "control characters; served back in Content-Disposition",
            schema: stringSchema,
          },
        ],
        requestBody: {
          description: `The file's bytes. ${BYTES_BODY_FRAMING} Its Content-Type (required; ` +
            "any media type but a form: multipart/form-data and " +
            "application/x-www-form-urlencoded are refused) is stored and served back.",
          body: { binary: true },
        },
        responses: [{
          status: 200,
          description: "Stored (or already stored with the same bytes)",
          body: { json: "UploadResult" },
          headers: RATE_LIMIT_HEADERS,
        }],
        errorHeaders: { 429: RATE_LIMIT_HEADERS },
        errors: [
          "invalid_cid",
          ...TOKEN_ERRORS,
          "insufficient_scope",
          "no_body",
          "empty_bodyy",
          "invalid_request",
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
          "server_busy",
          "wallet_unavailable",
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
        parameters: RETRIEVAL_PARAMETERS,
        responses: RETRIEVAL_RESPONSES,
        errors: ["invalid_cid", "not_found", "storage_offline", "piece_corrupt"],
      },
    },
    {
      method: "POST",
      path: "/api/auth/signup",
      handler: createSignupHandler(signup),
      doc: {
        operationId: "signup",
        summary: "Mint a token for an e-mail address (or mail a code to, under --signup verify)",
        description: "Depends on the server's signup mode. open: 201 with the token. verify: " +
          "202, and a one-time code is mailed to the address; POST /api/auth/signup/verify " +
          "exchanges it for the token. closed: 403 signup_closed. The same e-mail always gets " +
          "the same userId. Limited per client IP per hour (429 with Retry-After).",
        auth: "public",
        requestBody: { description: "Who the token is for", body: { json: "SignupRequest" } },
        responses: [{
          status: 201,
          description: "Created (--signup open); the token is in this answer only",
          body: { json: "SignupResult" },
        }, {
          status: 202,
          description: "A code was mailed to the address (--signup verify)",
          body: { json: "SignupVerificationSent" },
        }],
        errors: [
          ...JSON_BODY_ERRORS,
          "invalid_email",
          "invalid_label",
          "invalid_scopes",
          "invalid_quota",
          "signup_closed",
          "rate_limited",
          "mail_unavailable",
          "storage_offline",
        ],
      },
    },
    {
      method: "POST",
      path: "/api/auth/signup/verify",
      handler: createSignupVerifyHandler(signup),
      doc: {
        operationId: "verifySignup",
        summary: "Exchange a mailed signup code for the token (--signup verify)",
        description: "A code works once, for 15 minutes and at most 5 tries; a new signup for " +
          "the address replaces it.",
        auth: "public",
        requestBody: {
          description: "The address and its code",
          body: { json: "SignupVerifyRequest" },
        },
        responses: [{
          status: 201,
          description: "Created; the token is in this answer only",
          body: { json: "SignupResult" },
        }],
        errors: [...JSON_BODY_ERRORS, "invalid_request", "invalid_code", "signup_closed"],
      },
    },
    {
      method: "GET",
      path: "/api/auth/wallet/nonce",
      handler: createWalletNonceHandler(wallet),
      doc: {
        operationId: "getWalletNonce",
        summary: "A single-use nonce for a Sign-In with Ethereum message (wallet tier)",
        description: "Valid for 10 minutes, for one sign-in; limited per client IP per hour " +
          "(429 with Retry-After). 503 wallet_unavailable when this server has no wallet tier.",
        auth: "public",
        responses: [{ status: 200, description: "A new nonce", body: { json: "WalletNonce" } }],
        errors: ["rate_limited", "wallet_unavailable", "storage_offline"],
      },
    },
    {
      method: "POST",
      path: "/api/auth/wallet",
      handler: createWalletSignInHandler(wallet),
      doc: {
        operationId: "signInWithWallet",
        summary: "Exchange a signed EIP-4361 message for a 24-hour wallet token",
        description: "The message must name this server (domain = host of the base URL, uri = " +
          "the base URL), its chain id, a nonce from GET /api/auth/wallet/nonce, and an " +
          "expirationTime at most 10 minutes ahead; the signature is the address's " +
          "personal_sign of it (contract wallets: ERC-1271/ERC-6492). Any mismatch is 401 " +
          "invalid_signature, and the nonce is spent by the first try that names it. " +
          "Uploads with the token are in the wallet tier: the daily cap is the address's " +
          "USDC balance × the server's bytes per USDC.",
        auth: "public",
        requestBody: {
          description: "The signed message",
          body: { json: "WalletSignInRequest" },
        },
        responses: [{
          status: 201,
          description: "Signed in; the token is in this answer only",
          body: { json: "WalletSignInResult" },
        }],
        errors: [
          ...JSON_BODY_ERRORS,
          "invalid_request",
          "invalid_signature",
          "wallet_unavailable",
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
        description: "A token may always revoke itself; revoking another token of the same " +
          "user needs the `list` scope. Another user's jti and an unknown one are both 404. " +
          "Revoking again answers the first revocation's time.",
        auth: "token",
        requestBody: { description: "The token to revoke", body: { json: "RevokeRequest" } },
        responses: [{ status: 200, description: "Revoked", body: { json: "RevokeResult" } }],
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
        responses: [{
          status: 200,
          description: "Every token of the caller's user, newest first",
          body: { json: "TokenList" },
        }],
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
        parameters: [
          {
            name: "limit",
            in: "query",
            description: "Files per page",
            schema: { ...integerSchema, minimum: 1, maximum: 1000, default: 100 },
          },
          {
            name: "cursor",
            in: "query",
            description: "nextCursor of the previous page",
            schema: stringSchema,
          },
        ],
        responses: [{ status: 200, description: "One page", body: { json: "FilesPage" } }],
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
        parameters: [
          {
            name: "from",
            in: "query",
            description: "First day (UTC); default: 29 days before `to`",
            schema: dateSchema,
          },
          {
            name: "to",
            in: "query",
            description: "Last day (UTC); default: today. At most 366 days in all",
            schema: dateSchema,
          },
        ],
        responses: [{ status: 200, description: "Usage per day", body: { json: "Usage" } }],
        errors: [...TOKEN_ERRORS, "insufficient_scope", "invalid_request", "wallet_unavailable"],
      },
    },
    {
      method: "POST",
      path: "/api/deals/:dealId/extend",
      handler: createExtendDealHandler(services),
      doc: {
        operationId: "extendDeal",
        summary: "Extend a deal's term by one term of its tier",
        description: "Another user's deal, a sponsored deal and an unknown id are all 404.",
        auth: "token",
        scope: "pin",
        parameters: [{
          name: "dealId",
          in: "path",
          description: "dealId of an upload",
          schema: stringSchema,
        }],
        responses: [{ status: 200, description: "The extended deal", body: { json: "Deal" } }],
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
        parameters: [{
          name: "size",
          in: "query",
          description: "Also answer whether an upload of this many bytes would be accepted now",
          schema: { ...integerSchema, minimum: 1 },
        }],
        responses: [{ status: 200, description: "The caller's limits", body: { json: "Limits" } }],
        errors: [...TOKEN_ERRORS, "invalid_request", "wallet_unavailable"],
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
        responses: [{
          status: 200,
          description: "The accepted forms",
          body: { json: "PieceCidInfo" },
        }],
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
        description: "Same per-file cap as an upload; nothing is stored and no quota is charged.",
        auth: "token",
        scope: "put",
        requestBody: { description: `The bytes. ${BYTES_BODY_FRAMING}`, body: { binary: true } },
        responses: [{
          status: 200,
          description: "The body's PieceCIDv2",
          body: { json: "PieceCidResult" },
        }],
        errors: [
          ...TOKEN_ERRORS,
          "insufficient_scope",
          "no_body",
          "empty_bodyy",
          "invalid_request",
          "length_required",
          "too_large",
          "incomplete_body",
          "request_timeout",
          "rate_limited",
          "server_busy",
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
        responses: [
          { status: 200, description: "Healthy", body: { json: "Health" } },
          { status: 503, description: "Degraded (see the body)", body: { json: "Health" } },
        ],
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/metrics",
      handler: createMetricsHandler({
        metrics: services.metrics,
        token: services.config.metricsToken,
      }),
      doc: {
        operationId: "getMetrics",
        summary: "This server's counters and gauges in the Prometheus text format",
        description: "Text exposition format 0.0.4 (Content-Type: text/plain; version=0.0.4; " +
          "charset=utf-8): requests, latency and bytes by route, uploads by tier and outcome, " +
          "cap refusals, verification failures, and gauges read at scrape time. 404 " +
          "not_found when the server runs with --metrics false. With --metrics-token it needs " +
          "Authorization: Bearer <that token> (not a pk_live_ token); 401 invalid_token " +
          "otherwise.",
        auth: "public",
        responses: [{
          status: 200,
          description: "The metrics",
          body: { text: "text/plain" },
          headers: { "Content-Type": "always", "Cache-Control": "always" },
        }],
        errors: ["invalid_token", "not_found"],
      },
    },
    {
      method: "GET",
      path: "/",
      handler: web.page,
      doc: {
        operationId: "getWebPage",
        summary: "The web page: upload, files, tokens and usage in a browser",
        description: "HTML under a strict Content-Security-Policy; everything it loads comes " +
          "from /app/ on this server.",
        auth: "public",
        parameters: [WEB_IF_NONE_MATCH],
        responses: WEB_RESPONSES,
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/app/:file",
      handler: web.asset,
      doc: {
        operationId: "getWebAsset",
        summary: "A file of the web page (app.js, app.css, hash-worker.js)",
        auth: "public",
        parameters: [
          {
            name: "file",
            in: "path",
            description: "app.js, app.css or hash-worker.js",
            schema: stringSchema,
          },
          WEB_IF_NONE_MATCH,
        ],
        responses: WEB_RESPONSES,
        errors: ["not_found"],
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
        responses: [{
          status: 200,
          description: "The deprecations",
          body: { json: "Deprecations" },
        }],
        errors: [],
      },
    },
  ];
  // The document describes every row, itself included.
  routes.push({
    method: "GET",
    path: "/openapi.json",
    handler: createOpenApiHandler(services.baseUrl, routes),
    doc: {
      operationId: "getOpenApi",
      summary: "This API as an OpenAPI 3.1 document",
      auth: "public",
      responses: [{
        status: 200,
        description: "This document",
        body: { json: "OpenApiDocument" },
      }],
      errors: [],
    },
  });
  return routes;
}
