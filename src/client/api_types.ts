/**
 * The JSON the server answers, as the SDK's account calls return it. Written
 * out here rather than imported from src/http/schemas/bodies.ts so the SDK is
 * self-contained (no server module, even type-only, in what a consumer of the
 * package type-checks); tests/client_types_test.ts checks at compile time that
 * each shape is assignable both ways to the server's own type, so they cannot
 * drift apart.
 */

export type Scope = "put" | "get" | "list" | "pin";
export type Tier = "sponsored" | "token" | "wallet";

/** The body of every error answer (`error` is the stable code to match on). */
export interface ErrorBody {
  error: string;
  message: string;
}

/** What POST /api/upload answers for one piece. */
export interface PieceUploadResponse {
  cid: string;
  dealId: string;
  size: number;
  retrievalUrl: string;
  term: string;
  sponsored: boolean;
  owner: string | null;
}

export interface SignupRequest {
  email: string;
  label: string;
  /** Some of "put", "get", "list", "pin" (default all); others answer 400 invalid_scopes. */
  scopes?: readonly (Scope | (string & Record<never, never>))[];
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
  expiresAt: string;
  jti: string;
}

/** 200 from GET /api/auth/wallet/nonce: goes into the SIWE message; single use. */
export interface WalletNonce {
  nonce: string;
  /** Sign in before this (10 minutes). */
  expiresAt: string;
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
  expiresAt: string;
  jti: string;
}

/** 202 from POST /api/auth/signup in verify mode: a code was mailed. */
export interface SignupVerificationSent {
  status: "verification_sent";
  email: string;
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

/** A deal as its owner sees it (GET /api/files, POST /api/deals/{dealId}/extend). */
export interface Deal {
  cid: string;
  dealId: string;
  size: number;
  contentType: string;
  filename: string | null;
  createdAt: string;
  term: string;
  termEndsAt: string;
  retrievalUrl: string;
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

export type LimitRefusal = "too_large" | "rate_limited" | "quota_exceeded" | "insufficient_scope";

/** One upload tier the server offers. */
export interface TierInfo {
  tier: Tier;
  auth: "none" | "token" | "wallet";
  /** null: no per-file cap. */
  maxFileBytes: number | null;
  /** null: the wallet's balance × bytesPerUsdc. */
  dailyCapBytes: number | null;
  termDays: number;
  bytesPerUsdc?: number;
}

/** The balance a wallet caller's daily cap comes from. */
export interface WalletLimits {
  address: string;
  usdcBalance: string;
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
  tiers: TierInfo[];
  /** Only for a wallet token. */
  wallet?: WalletLimits;
  /** The three below only when `size` was asked about. */
  size?: number;
  accepted?: boolean;
  reason?: LimitRefusal | null;
}
