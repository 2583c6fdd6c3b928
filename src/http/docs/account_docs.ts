/**
 * What /openapi.json says of the account routes (http/account/ serves them):
 * signup and its verification, wallet sign-in, the caller's tokens, files,
 * usage, deals and limits. Kept apart from the handlers so a handler's file
 * holds only what it does, and the API document's prose for one room reads
 * in one place; the numbers a doc states (page sizes, date ranges) come from
 * the handlers, so the two cannot drift apart.
 */
import { DEAL_STATES } from "../../kernel/wire.ts";
import { FILES_PER_PAGE } from "../account/files.ts";
import { USAGE_DAYS } from "../account/usage.ts";
import { CHANGE_TOKEN_ERRORS, CID_SCHEMA, JSON_BODY_ERRORS, TOKEN_ERRORS } from "./route_doc.ts";
import type { ParameterDoc, RouteDoc, SuccessDoc } from "./route_doc.ts";
import type { SchemaName } from "./schemas/bodies.ts";
import type { JsonSchema } from "./schemas/json_schema.ts";
import { dateSchema, enumOf, integerSchema, stringSchema } from "./schemas/json_schema.ts";

/** A query parameter; all of this room's are optional. */
function queryParameter(name: string, description: string, schema: JsonSchema): ParameterDoc {
  return { name, in: "query", description, schema };
}

/** A 201 that carries a new token: the only time the token is ever shown. */
function tokenIssued(description: string, schema: SchemaName): SuccessDoc {
  return {
    status: 201,
    description: `${description}; the token is in this answer only`,
    body: { json: schema },
  };
}

export const signupDoc: RouteDoc = {
  operationId: "signup",
  summary: "Mint a token for an e-mail address (or mail a code to, under --signup verify)",
  description: "Depends on the server's signup mode. open: 201 with the token. verify: " +
    "202, and a one-time code is mailed to the address; POST /api/auth/signup/verify " +
    "exchanges it for the token. closed: 403 signup_closed. The same e-mail always gets " +
    "the same userId. Limited per client IP per hour (429 with Retry-After).",
  auth: "public",
  requestBody: { description: "Who the token is for", body: { json: "SignupRequest" } },
  responses: [tokenIssued("Created (--signup open)", "SignupResult"), {
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
};

export const verifySignupDoc: RouteDoc = {
  operationId: "verifySignup",
  summary: "Exchange a mailed signup code for the token (--signup verify)",
  description: "A code works once, for 15 minutes and at most 5 wrong tries, from the client " +
    "(IP address, IPv6 /64) that asked for it; that client's next signup for the address " +
    "replaces it with a fresh code and fresh tries, and nobody else's signups or tries touch it.",
  auth: "public",
  requestBody: { description: "The address and its code", body: { json: "SignupVerifyRequest" } },
  responses: [tokenIssued("Created", "SignupResult")],
  errors: [...JSON_BODY_ERRORS, "invalid_request", "invalid_code", "signup_closed"],
};

export const getWalletNonceDoc: RouteDoc = {
  operationId: "getWalletNonce",
  summary: "A single-use nonce for a Sign-In with Ethereum message (wallet tier)",
  description: "Valid for 10 minutes, for one sign-in; limited per client IP per hour " +
    "(429 with Retry-After). 503 wallet_unavailable when this server has no wallet tier.",
  auth: "public",
  responses: [{ status: 200, description: "A new nonce", body: { json: "WalletNonce" } }],
  errors: ["rate_limited", "wallet_unavailable", "storage_offline"],
};

export const signInWithWalletDoc: RouteDoc = {
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
  requestBody: { description: "The signed message", body: { json: "WalletSignInRequest" } },
  responses: [tokenIssued("Signed in", "WalletSignInResult")],
  errors: [
    ...JSON_BODY_ERRORS,
    "invalid_request",
    "invalid_signature",
    "wallet_unavailable",
    "storage_offline",
  ],
};

export const getJwksDoc: RouteDoc = {
  operationId: "getJwks",
  summary: "The public keys that verify tokens (--token-alg RS256), as a JWK Set",
  description: "Every RSA key a live token may be signed with, by kid: the signing key's, " +
    "and an earlier key's until the last token it signed has expired. Any JOSE library " +
    "verifies a token (the part after pk_live_) against it, e.g. jose's " +
    "createRemoteJWKSet and jwtVerify with algorithms [RS256]. 404 under HS256, which has no " +
    "public key.",
  auth: "public",
  responses: [{ status: 200, description: "The JWK Set", body: { json: "Jwks" } }],
  errors: ["not_found"],
};

export const getSessionDoc: RouteDoc = {
  operationId: "getSession",
  summary: "Who the request acts as: its token, its session cookie, or no one",
  description: "Describes the token a request carries (in the header, the query or the " +
    "session cookie), never the token itself; signedIn is false without credentials. " +
    "The web page asks it on load, since none of its scripts can read the cookie.",
  auth: "optional",
  responses: [{ status: 200, description: "Who the caller is", body: { json: "SessionInfo" } }],
  errors: [...TOKEN_ERRORS],
};

export const startSessionDoc: RouteDoc = {
  operationId: "startSession",
  summary: "Sign the web page in: a token for the __Host-storage_session cookie",
  description: "Sets an HttpOnly, Secure, SameSite=Strict cookie that authenticates as the " +
    "token would, until the token is revoked or expires, or DELETE ends the session. Only " +
    "from the service's own page (Origin, or Sec-Fetch-Site: same-origin): else 403 " +
    "csrf_rejected. The cookie holds a random secret; the server keeps only its SHA-256.",
  auth: "public",
  requestBody: { description: "The token to sign in with", body: { json: "SessionRequest" } },
  responses: [{
    status: 201,
    description: "Signed in; the cookie is set",
    body: { json: "SessionInfo" },
    headers: { "Set-Cookie": "always" },
  }],
  errors: [...JSON_BODY_ERRORS, ...CHANGE_TOKEN_ERRORS, "invalid_request"],
};

export const endSessionDoc: RouteDoc = {
  operationId: "endSession",
  summary: "Sign the web page out: end the session and remove its cookie",
  description: "Ends the session of the request's cookie (also when there is none). The " +
    "token it acted as stays valid. Only from the service's own page, as POST.",
  auth: "public",
  responses: [{
    status: 200,
    description: "Signed out (signedIn: false); the cookie is removed",
    body: { json: "SessionInfo" },
    headers: { "Set-Cookie": "always" },
  }],
  errors: ["csrf_rejected"],
};

export const revokeTokenDoc: RouteDoc = {
  operationId: "revokeToken",
  summary: "Revoke a token by its jti",
  description: "A token may always revoke itself; revoking another token of the same " +
    "user needs the `list` scope. Another user's jti and an unknown one are both 404. " +
    "Revoking again answers the first revocation's time.",
  auth: "token",
  requestBody: { description: "The token to revoke", body: { json: "RevokeRequest" } },
  responses: [{ status: 200, description: "Revoked", body: { json: "RevokeResult" } }],
  errors: [
    ...CHANGE_TOKEN_ERRORS,
    ...JSON_BODY_ERRORS,
    "invalid_request",
    "insufficient_scope",
    "not_found",
  ],
};

export const listTokensDoc: RouteDoc = {
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
};

export const listFilesDoc: RouteDoc = {
  operationId: "listFiles",
  summary: "List the caller's uploads, newest first",
  auth: "token",
  scope: "list",
  parameters: [
    queryParameter("limit", "Files per page", {
      ...integerSchema,
      minimum: 1,
      maximum: FILES_PER_PAGE.atMost,
      default: FILES_PER_PAGE.byDefault,
    }),
    queryParameter("cursor", "nextCursor of the previous page", stringSchema),
    queryParameter(
      "state",
      "Only deals in this state now (default: every deal)",
      enumOf(DEAL_STATES),
    ),
    queryParameter(
      "cid",
      "Only the uploads (deals) of this cid: does the caller own one already?",
      CID_SCHEMA,
    ),
  ],
  responses: [{ status: 200, description: "One page", body: { json: "FilesPage" } }],
  errors: [...TOKEN_ERRORS, "insufficient_scope", "invalid_request", "invalid_cid"],
};

export const getUsageDoc: RouteDoc = {
  operationId: "getUsage",
  summary: "The caller's uploads per UTC day and today's quota",
  auth: "token",
  scope: "list",
  parameters: [
    queryParameter(
      "from",
      `First day (UTC); default: ${USAGE_DAYS.byDefault - 1} days before \`to\``,
      dateSchema,
    ),
    queryParameter(
      "to",
      `Last day (UTC); default: today. At most ${USAGE_DAYS.atMost} days in all`,
      dateSchema,
    ),
  ],
  responses: [{ status: 200, description: "Usage per day", body: { json: "Usage" } }],
  errors: [...TOKEN_ERRORS, "insufficient_scope", "invalid_request", "wallet_unavailable"],
};

const DEAL_ID_PARAMETER: ParameterDoc = {
  name: "dealId",
  in: "path",
  description: "dealId of an upload",
  schema: stringSchema,
};

export const extendDealDoc: RouteDoc = {
  operationId: "extendDeal",
  summary: "Extend a deal's term by one term of its tier",
  description: "Another user's deal, a sponsored deal and an unknown id are all 404. A " +
    "deleted deal, or one whose piece was removed after it expired, is 410.",
  auth: "token",
  scope: "pin",
  parameters: [DEAL_ID_PARAMETER],
  responses: [{ status: 200, description: "The extended deal", body: { json: "Deal" } }],
  errors: [...CHANGE_TOKEN_ERRORS, "insufficient_scope", "not_found", "gone"],
};

export const getDealDoc: RouteDoc = {
  operationId: "getDeal",
  summary: "One of the caller's deals, with its piece's hand-off to the storage provider",
  description:
    "With a hand-off to a storage provider (--handoff pdp) the deal carries `handoff`: " +
    "where its piece stands there, and once live its on-chain identity (dataSetId, pieceId). " +
    "Another user's deal, a sponsored deal and an unknown id are all 404.",
  auth: "token",
  scope: "list",
  parameters: [DEAL_ID_PARAMETER],
  responses: [{ status: 200, description: "The deal", body: { json: "Deal" } }],
  errors: [...TOKEN_ERRORS, "insufficient_scope", "not_found"],
};

export const deleteDealDoc: RouteDoc = {
  operationId: "deleteDeal",
  summary: "End a deal now (its state becomes deleted)",
  description: "The quota the upload used is not given back. Once no deal keeps the piece, " +
    "it is removed after the server's grace period; copies made elsewhere (caches, " +
    "storage providers) may remain. Deleting a deleted deal returns it unchanged. Another " +
    "user's deal, a sponsored deal and an unknown id are all 404.",
  auth: "token",
  scope: "pin",
  parameters: [DEAL_ID_PARAMETER],
  responses: [{ status: 200, description: "The deleted deal", body: { json: "Deal" } }],
  errors: [...CHANGE_TOKEN_ERRORS, "insufficient_scope", "not_found"],
};

export const getLimitsDoc: RouteDoc = {
  operationId: "getLimits",
  summary: "The caller's tier, caps and what is left today",
  auth: "optional",
  parameters: [queryParameter(
    "size",
    "Also answer whether an upload of this many bytes would be accepted now",
    { ...integerSchema, minimum: 1 },
  )],
  responses: [{ status: 200, description: "The caller's limits", body: { json: "Limits" } }],
  errors: [...TOKEN_ERRORS, "invalid_request", "wallet_unavailable"],
};
