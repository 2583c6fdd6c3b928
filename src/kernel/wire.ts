/**
 * The JSON bodies of the API, written once for both ends of the wire: the
 * server's handlers build their answers as these types (`satisfies Deal`, …)
 * and the SDK (src/client/sdk/) returns them to its callers. It imports nothing,
 * so the SDK can use it without pulling in any server module, and the server
 * without depending on the SDK.
 *
 * The JSON Schemas /openapi.json publishes for these shapes are in
 * http/docs/schemas/bodies.ts; tests/http/openapi_test.ts generates a client from the
 * served document and checks that each schema's type is this module's type,
 * both ways, so schema, handler and SDK cannot drift apart.
 */

/** What a token may do (the interface's scope table). */
export const SCOPES = ["put", "get", "list", "pin"] as const;
export type Scope = typeof SCOPES[number];

/** Upload tiers: per-file and daily caps and the deal term depend on the tier. */
export const TIERS = ["sponsored", "token", "wallet"] as const;
export type Tier = typeof TIERS[number];

/**
 * The body of every error answer: `error` is the stable code to match on
 * (the server narrows it to its table's codes, src/kernel/errors.ts), `message` is
 * for people and may change.
 */
export interface ErrorBody<Code extends string = string> {
  error: Code;
  message: string;
}

/** What POST /api/upload answers for one piece. */
export interface UploadResult {
  cid: string;
  dealId: string;
  size: number;
  retrievalUrl: string;
  term: string;
  sponsored: boolean;
  owner: string | null;
  /** A CAR upload's roots (the cids its header names); null for any other upload. */
  roots: string[] | null;
  /** With a hand-off to a storage provider (--handoff pdp): where the piece stands there. */
  handoff?: HandoffView | null;
}

/** POST /api/auth/signup: who the token is for. */
export interface SignupRequest {
  email: string;
  label: string;
  /** Some of "put", "get", "list", "pin" (default all); others answer 400 invalid_scopes. */
  scopes?: Scope[];
  quotaMb?: number;
}

/** 201 from POST /api/auth/signup (open mode) and /api/auth/signup/verify. */
export interface SignupResult {
  /** pk_live_<jwt>: shown only in this answer. */
  token: string;
  userId: string;
  email: string;
  scopes: Scope[];
  quotaMb: number;
  /** RFC 3339. */
  expiresAt: string;
  jti: string;
}

/** Who a request acts as (GET, POST /api/auth/session): its token described, never the token. */
export interface SessionInfo {
  signedIn: boolean;
  /** How the request carried its credentials; null when it carried none. */
  via: "header" | "query" | "cookie" | null;
  /** The rest are null (scopes empty) when signed out; email or wallet by the token's kind. */
  userId: string | null;
  email: string | null;
  wallet: string | null;
  scopes: Scope[];
  /** quotaMb: e-mail tokens only; expiresAt: when the token (and the session) ends. */
  quotaMb: number | null;
  expiresAt: string | null;
  jti: string | null;
}

/** 202 from POST /api/auth/signup in verify mode: a code was mailed. */
export interface SignupVerificationSent {
  status: "verification_sent";
  email: string;
}

/** POST /api/auth/signup/verify: the address and its mailed code. */
export interface SignupVerifyRequest {
  email: string;
  code: string;
}

/** 200 from GET /api/auth/wallet/nonce: goes into the SIWE message; single use. */
export interface WalletNonce {
  nonce: string;
  /** Sign in before this (10 minutes), RFC 3339. */
  expiresAt: string;
}

/** POST /api/auth/wallet: a signed EIP-4361 message. */
export interface WalletSignInRequest {
  message: string;
  signature: string;
}

/** 201 from POST /api/auth/wallet: a wallet-tier token for the signing address. */
export interface WalletSignInResult {
  /** pk_live_<jwt> for 24 hours: shown only in this answer. */
  token: string;
  /** The same for every sign-in of one address. */
  userId: string;
  /** The address, EIP-55 checksummed. */
  wallet: string;
  scopes: Scope[];
  /** RFC 3339. */
  expiresAt: string;
  jti: string;
}

/** POST /api/deals: a deal on bytes already stored under cid, without sending them. */
export interface DealRequest {
  cid: string;
}

/** GET /.well-known/jwks.json (RFC 7517): the RSA keys that verify live RS256 tokens, by kid. */
export interface Jwks {
  keys: JwkRsa[];
}

/** n and e base64url; kid the RFC 7638 thumbprint, as each token's header names it. */
export type JwkRsa = { kty: "RSA"; n: string; e: string; kid: string; alg: "RS256"; use: "sig" };

/** POST /api/upload-links: the one upload a signed link allows, and how long it lives. */
export interface UploadLinkRequest {
  /** The upload's cid, Content-Length and Content-Type (exactly), and name if any. */
  cid: string;
  size: number;
  contentType: string;
  filename?: string | null;
  /** 1 to 3600 (the default). */
  expiresInSeconds?: number;
}

/** 201 from POST /api/upload-links: where to POST the bytes once, and until when. */
export type UploadLink = { url: string; expiresAt: string };

/** POST /api/auth/session: the token the session acts as. */
export type SessionRequest = { token: string };

export interface RevokeRequest {
  jti: string;
}

export interface RevokeResult {
  jti: string;
  revoked: true;
  revokedAt: string;
}

export interface TokenInfo {
  jti: string;
  label: string;
  scopes: Scope[];
  /** null for a wallet token: its quota follows the wallet's USDC balance. */
  quotaMb: number | null;
  issuedAt: string;
  expiresAt: string;
  revoked: boolean;
  revokedAt: string | null;
  current: boolean;
}

export interface TokenList {
  tokens: TokenInfo[];
}

/**
 * Where a deal is in its life: `active` until its termEndsAt, then `expired`;
 * `deleted` once its owner ended it (DELETE /api/deals/{dealId}).
 */
export const DEAL_STATES = ["active", "expired", "deleted"] as const;
export type DealState = typeof DEAL_STATES[number];

/** A deal as its owner sees it (GET /api/files, POST /api/deals/{dealId}/extend, DELETE). */
export interface Deal {
  cid: string;
  dealId: string;
  size: number;
  contentType: string;
  filename: string | null;
  createdAt: string;
  term: string;
  termEndsAt: string;
  state: DealState;
  /** When the owner deleted the deal; null unless state is "deleted". */
  deletedAt: string | null;
  retrievalUrl: string;
  /** Where the piece stands with the storage provider (--handoff pdp only; null: not known yet). */
  handoff?: HandoffView | null;
}

export const HANDOFF_STATES = [
  "queued",
  "pulling",
  "adding",
  "live",
  "failed",
  "ineligible",
  "removing",
  "removed",
] as const;

/** A piece's hand-off to the PDP storage provider (docs/handoff.md). */
export interface HandoffView {
  state: typeof HANDOFF_STATES[number];
  /** The provider's service URL. */
  provider: string;
  /** The PieceCIDv2 the provider knows the piece by; null until computed. */
  pieceCid: string | null;
  /** The on-chain data set (decimal), once the piece is in it. */ dataSetId: string | null;
  /** The piece's id in that data set (decimal): with dataSetId, its on-chain identity. */
  pieceId: string | null;
  /** The transaction that added the piece, or that scheduled its removal. */
  txHash: string | null;
  /** What is known of why it failed, or why it is ineligible. */
  error: string | null;
  updatedAt: string;
}

export interface FilesPage {
  files: Deal[];
  nextCursor: string | null;
}

export interface UsageDay {
  date: string;
  bytes: number;
  uploads: number;
}

export interface Usage {
  from: string;
  to: string;
  days: UsageDay[];
  quotaBytes: number;
  remainingTodayBytes: number;
}

/** Why /api/limits?size= says an upload would be refused: the code the upload would get. */
export const LIMIT_REFUSALS = [
  "too_large",
  "rate_limited",
  "quota_exceeded",
  "insufficient_scope",
] as const;
export type LimitRefusal = typeof LIMIT_REFUSALS[number];

/** One upload tier the server offers (GET /api/limits lists them). */
export interface TierInfo {
  tier: Tier;
  /** How a caller gets into the tier. */
  auth: "none" | "token" | "wallet";
  /** null: no per-file cap. */
  maxFileBytes: number | null;
  /** Per IP (sponsored) or the most a token may carry; null: the wallet's balance × bytesPerUsdc. */
  dailyCapBytes: number | null;
  termDays: number;
  /** Wallet tier only: daily bytes per 1 USDC of balance. */
  bytesPerUsdc?: number;
}

/** The balance a wallet caller's daily cap comes from. */
export interface WalletLimits {
  address: string;
  usdcBalance: string;
  /** At the first block of the current UTC day; null: the balance now stands for it. */
  dayStartUsdcBalance: string | null;
  bytesPerUsdc: number;
  balanceReadAt: string;
  stale: boolean;
}

export interface Limits {
  tier: Tier;
  /** null: no per-file cap (the wallet tier, unless its operator set one). */
  maxFileBytes: number | null;
  dailyCapBytes: number;
  usedTodayBytes: number;
  remainingTodayBytes: number;
  resetsAt: string;
  resetSeconds: number;
  /** Every tier this server offers. */
  tiers: TierInfo[];
  /** Only for a wallet token's caller. */
  wallet?: WalletLimits;
  /** The three below only when ?size= was given. */
  size?: number;
  accepted?: boolean;
  reason?: LimitRefusal | null;
}

export interface PieceCidResult {
  cid: string;
  size: number;
}

export interface PieceCidForm {
  name: string;
  example: string;
  spec?: string;
  cid: string;
  multihash?: string;
  digest?: string;
  howToCompute: string;
  verified: boolean;
}

export type PieceStatus = { cid: string; stored: boolean }; // GET /api/pieces/{cid}

export interface PieceCidInfo {
  pattern: string;
  caseInsensitive: boolean;
  opaqueAccepted: boolean;
  forms: PieceCidForm[];
  compute: string;
}

export interface Deprecation {
  feature: string;
  deprecatedAt: string;
  removedIn: string;
  instead: string;
}

export interface Deprecations {
  deprecations: Deprecation[];
}

/** What GET /openapi.json serves (its outline; the rest is OpenAPI 3.1's). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  paths: { [path: string]: unknown };
  components: { [kind: string]: unknown };
}
