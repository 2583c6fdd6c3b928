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

/** The hand-off in /healthz. */
export interface HandoffHealth {
  provider: string;
  /** Whether the provider answered the last run's requests. */
  answering: boolean;
  lastAnswerAt: string | null;
  /** The last failure to reach it, while it lasts. */
  problem: string | null;
  /** Pieces by state. */
  pieces: Record<string, number>;
  oldestQueuedAt: string | null;
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

export interface Health {
  status: "ok" | "degraded";
  storage: { ok: boolean; source: string; detail: string };
  database: DatabaseHealth;
  digests: { backlog: number; failures: number };
  uploads: { inFlight: number };
  memory: { rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number };
  wallet: WalletHealth;
  gc: GcHealth;
  /** The work this server runs by itself, every so often (the jobs that are on). */
  jobs: JobHealth[];
  /** With --handoff pdp: the storage provider, whether it answers, pieces by state. */
  handoff?: HandoffHealth;
}

/** One background job of this server (a sweep, a watch, a probe), as /healthz reports it. */
export interface JobHealth {
  name: string;
  /** From the end of one run to the start of the next. */
  intervalSeconds: number;
  /** Whether it runs now. */
  running: boolean;
  /** The last run that ended; null: none yet. */
  lastRun: JobRun | null;
  /** When the next run is due; null while one runs. */
  nextRunAt: string | null;
}

export interface JobRun {
  startedAt: string;
  finishedAt: string;
  /** False when it failed; error says why. */
  ok: boolean;
  error: string | null;
}

/** Garbage collection of pieces no deal wants, as /healthz reports it. */
export interface GcHealth {
  /** Hours between this server's own sweeps; 0 when it runs none (`main.ts gc` may). */
  intervalHours: number;
  /** Days a piece is kept after its last deal ended. */
  graceDays: number;
  /** Whether a sweep is running in this server now. */
  running: boolean;
  /** The last sweep that finished, by any instance or `main.ts gc`; null: none yet. */
  lastSweep: GcSweepSummary | null;
}

export interface GcSweepSummary {
  startedAt: string;
  finishedAt: string;
  /** Pieces whose bytes it removed, and their bytes. */
  removedPieces: number;
  removedBytes: number;
  /** Objects no metadata named that it removed. */
  removedOrphans: number;
}

/** The metadata database as /healthz reports it (backends/metadata.ts answers it). */
export interface DatabaseHealth {
  ok: boolean;
  /** False when the database lives in memory because no data directory is bound. */
  persistent: boolean;
  /** Where the metadata lives: SQLite in the data directory, or a shared PostgreSQL. */
  backend: "sqlite" | "postgres";
  detail: string;
}

/** The wallet tier's chain as /healthz reports it (its state never makes the server degraded). */
export interface WalletHealth {
  enabled: boolean;
  ok: boolean;
  chainId: number | null;
  rpcChainId: number | null;
  lastError: string | null;
  lastSuccessAt: string | null;
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
