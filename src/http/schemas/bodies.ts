/**
 * One JSON Schema per body the API reads or sends, published by /openapi.json
 * under components.schemas, and beside each the TypeScript type the handler
 * builds its answer as (`satisfies UploadResult`, …). tests/openapi_test.ts
 * generates a client from the served document and checks that the type it
 * gets for each schema is assignable both ways to the type written here, so
 * schema, handler and client cannot drift apart.
 */
import { SCOPES, TIERS } from "../../domain.ts";
import type { Scope, Tier } from "../../domain.ts";
import { ERROR_STATUS } from "../../errors.ts";
import type { ErrorCode } from "../../errors.ts";
import {
  arrayOf,
  booleanSchema,
  dateSchema,
  dateTimeSchema,
  enumOf,
  integerSchema,
  nullable,
  objectOf,
  schemaRef,
  stringSchema,
  uriSchema,
} from "./json_schema.ts";
import type { JsonSchema } from "./json_schema.ts";
import { MAX_MESSAGE_CHARS, MAX_SIGNATURE_CHARS } from "../../auth/wallet_sign_in_result.ts";

/** The body of every error answer. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
}

export interface UploadResult {
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
  scopes?: Scope[];
  quotaMb?: number;
}

export type { SignupResult } from "../../auth/signup_result.ts";

export interface SignupVerificationSent {
  status: "verification_sent";
  email: string;
}

export interface SignupVerifyRequest {
  email: string;
  code: string;
}

export interface WalletNonce {
  nonce: string;
  expiresAt: string;
}

export interface WalletSignInRequest {
  message: string;
  signature: string;
}

export type { WalletSignInResult } from "../../auth/wallet_sign_in_result.ts";

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

/** Why /api/limits?size= says an upload would be refused: the code the upload would get. */
export const LIMIT_REFUSALS = [
  "too_large",
  "rate_limited",
  "quota_exceeded",
  "insufficient_scope",
] as const satisfies readonly ErrorCode[];
export type LimitRefusal = typeof LIMIT_REFUSALS[number];

/** One upload tier this server offers (GET /api/limits lists them). */
export interface TierInfo {
  tier: Tier;
  /** How a caller gets into the tier. */
  auth: "none" | "token" | "wallet";
  maxFileBytes: number | null;
  /** Per IP (sponsored) or the most a token may carry; null: from the wallet's balance. */
  dailyCapBytes: number | null;
  termDays: number;
  /** Wallet tier only: daily bytes per 1 USDC of balance. */
  bytesPerUsdc?: number;
}

/** The balance a wallet caller's cap comes from. */
export interface WalletLimits {
  address: string;
  usdcBalance: string;
  bytesPerUsdc: number;
  balanceReadAt: string;
  stale: boolean;
}

export interface Limits {
  tier: Tier;
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
  database: { ok: boolean; persistent: boolean; backend: "sqlite" | "postgres"; detail: string };
  digests: { backlog: number; failures: number };
  uploads: { inFlight: number };
  memory: { rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number };
  wallet: WalletHealth;
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

const dealSchema = objectOf({
  cid: stringSchema,
  dealId: stringSchema,
  size: { ...integerSchema, description: "Bytes" },
  contentType: { ...stringSchema, description: "The Content-Type given at upload" },
  filename: { ...nullable(stringSchema), description: "The decoded X-Filename, or null" },
  createdAt: dateTimeSchema,
  term: { ...stringSchema, examples: ["365 days"] },
  termEndsAt: dateTimeSchema,
  retrievalUrl: uriSchema,
});

const tokenInfoSchema = objectOf({
  jti: stringSchema,
  label: stringSchema,
  scopes: arrayOf(enumOf(SCOPES)),
  quotaMb: {
    ...nullable(integerSchema),
    description: "Daily quota in MiB; null for a wallet token (its quota follows the balance)",
  },
  issuedAt: dateTimeSchema,
  expiresAt: dateTimeSchema,
  revoked: booleanSchema,
  revokedAt: nullable(dateTimeSchema),
  current: { ...booleanSchema, description: "True for the token that made this request" },
});

const usageDaySchema = objectOf({
  date: dateSchema,
  bytes: integerSchema,
  uploads: integerSchema,
});

const pieceCidFormSchema = objectOf({
  name: stringSchema,
  example: stringSchema,
  spec: stringSchema,
  cid: stringSchema,
  multihash: stringSchema,
  digest: stringSchema,
  howToCompute: stringSchema,
  verified: { ...booleanSchema, description: "Whether uploads under this form are checked" },
}, { optional: ["spec", "multihash", "digest"] });

const deprecationSchema = objectOf({
  feature: stringSchema,
  deprecatedAt: dateTimeSchema,
  removedIn: stringSchema,
  instead: stringSchema,
});

/** What GET /openapi.json serves (its outline; the rest is OpenAPI 3.1's). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  paths: { [path: string]: unknown };
  components: { [kind: string]: unknown };
}

/** Published as components.schemas; each name is also the TypeScript type above. */
export const COMPONENT_SCHEMAS = {
  Error: objectOf({
    error: enumOf(Object.keys(ERROR_STATUS), {
      description: "Stable code to match on; each response lists the codes it can carry",
    }),
    message: { ...stringSchema, description: "For people; may change" },
  }),
  UploadResult: objectOf({
    cid: { ...stringSchema, description: "The cid as sent" },
    dealId: stringSchema,
    size: { ...integerSchema, description: "Bytes stored" },
    retrievalUrl: uriSchema,
    term: { ...stringSchema, examples: ["30 days"] },
    sponsored: { ...booleanSchema, description: "True when uploaded without a token" },
    owner: {
      ...nullable(stringSchema),
      description: "The token's e-mail or the wallet's EIP-55 address; null when sponsored",
    },
  }),
  SignupRequest: objectOf({
    email: { ...stringSchema, format: "email", maxLength: 254 },
    label: { ...stringSchema, minLength: 1, maxLength: 64 },
    // No `default` keyword: generators would then make the field required.
    scopes: arrayOf(enumOf(SCOPES), { minItems: 1, description: "Default: every scope" }),
    quotaMb: {
      ...integerSchema,
      minimum: 1,
      description: "Daily upload quota in MiB; default and maximum: the server's token daily cap",
    },
  }, { optional: ["scopes", "quotaMb"] }),
  SignupResult: objectOf({
    token: { ...stringSchema, description: "pk_live_<JWT>; shown only in this answer" },
    userId: { ...stringSchema, description: "The same for every signup of one e-mail" },
    email: stringSchema,
    scopes: arrayOf(enumOf(SCOPES)),
    quotaMb: integerSchema,
    expiresAt: dateTimeSchema,
    jti: { ...stringSchema, description: "The token's id: revoke it with this" },
  }),
  SignupVerificationSent: objectOf({
    status: { type: "string", const: "verification_sent" },
    email: { ...stringSchema, description: "Where the code was sent (trimmed, lowercased)" },
  }),
  SignupVerifyRequest: objectOf({
    email: { ...stringSchema, maxLength: 254 },
    code: { ...stringSchema, description: "The code from the mail" },
  }),
  WalletNonce: objectOf({
    nonce: { ...stringSchema, description: "Put in the SIWE message; single use" },
    expiresAt: { ...dateTimeSchema, description: "Sign in before this (10 minutes)" },
  }),
  WalletSignInRequest: objectOf({
    message: {
      ...stringSchema,
      maxLength: MAX_MESSAGE_CHARS,
      description: "An EIP-4361 message: domain = this server's host, uri = its base URL, " +
        "chainId = its chain, nonce from GET /api/auth/wallet/nonce, and an expirationTime " +
        "at most 10 minutes ahead",
    },
    signature: {
      ...stringSchema,
      pattern: "^0x[0-9a-fA-F]+$",
      maxLength: MAX_SIGNATURE_CHARS,
      description: "personal_sign (EIP-191) signature of the message, as hex",
    },
  }),
  WalletSignInResult: objectOf({
    token: { ...stringSchema, description: "pk_live_<JWT> for 24 hours; shown only here" },
    userId: { ...stringSchema, description: "The same for every sign-in of one address" },
    wallet: { ...stringSchema, description: "The address, EIP-55 checksummed" },
    scopes: arrayOf(enumOf(SCOPES)),
    expiresAt: dateTimeSchema,
    jti: { ...stringSchema, description: "The token's id: revoke it with this" },
  }),
  RevokeRequest: objectOf({
    jti: { ...stringSchema, minLength: 1, maxLength: 128, description: "The token's id" },
  }),
  RevokeResult: objectOf({
    jti: stringSchema,
    revoked: { type: "boolean", const: true },
    revokedAt: { ...dateTimeSchema, description: "When it was first revoked" },
  }),
  TokenInfo: tokenInfoSchema,
  TokenList: objectOf({ tokens: arrayOf(schemaRef("TokenInfo")) }),
  Deal: dealSchema,
  FilesPage: objectOf({
    files: arrayOf(schemaRef("Deal")),
    nextCursor: {
      ...nullable(stringSchema),
      description: "Pass as ?cursor= for the next page; null on the last page",
    },
  }),
  UsageDay: usageDaySchema,
  Usage: objectOf({
    from: dateSchema,
    to: dateSchema,
    days: arrayOf(schemaRef("UsageDay"), { description: "Every day of the range, zeros included" }),
    quotaBytes: integerSchema,
    remainingTodayBytes: integerSchema,
  }),
  TierInfo: objectOf({
    tier: enumOf(TIERS),
    auth: { ...enumOf(["none", "token", "wallet"]), description: "How a caller gets in" },
    maxFileBytes: { ...nullable(integerSchema), description: "null: no per-file cap" },
    dailyCapBytes: {
      ...nullable(integerSchema),
      description: "Per IP (sponsored), the most a token may carry (token), or null: " +
        "balance × bytesPerUsdc (wallet)",
    },
    termDays: integerSchema,
    bytesPerUsdc: { ...integerSchema, description: "Wallet tier: daily bytes per 1 USDC" },
  }, { optional: ["bytesPerUsdc"] }),
  WalletLimits: objectOf({
    address: { ...stringSchema, description: "EIP-55" },
    usdcBalance: { ...stringSchema, description: "Whole USDC, exact decimal", examples: ["12.5"] },
    bytesPerUsdc: integerSchema,
    balanceReadAt: { ...dateTimeSchema, description: "When the chain reported the balance" },
    stale: {
      ...booleanSchema,
      description: "True while the chain cannot be reached and a read of the last 10 minutes " +
        "stands in",
    },
  }),
  Limits: objectOf({
    tier: enumOf(TIERS),
    maxFileBytes: { ...nullable(integerSchema), description: "null: no per-file cap" },
    dailyCapBytes: integerSchema,
    usedTodayBytes: integerSchema,
    remainingTodayBytes: integerSchema,
    resetsAt: dateTimeSchema,
    resetSeconds: integerSchema,
    tiers: arrayOf(schemaRef("TierInfo"), { description: "The tiers this server offers" }),
    wallet: { ...schemaRef("WalletLimits"), description: "Only for a wallet token" },
    size: { ...integerSchema, description: "Only with ?size=: the size asked about" },
    accepted: { ...booleanSchema, description: "Only with ?size=: would the upload be accepted" },
    reason: {
      ...nullable(enumOf(LIMIT_REFUSALS)),
      description: "Only with ?size=: the error code the upload would get, or null",
    },
  }, { optional: ["wallet", "size", "accepted", "reason"] }),
  PieceCidResult: objectOf({
    cid: { ...stringSchema, description: "The PieceCIDv2 of the body" },
    size: integerSchema,
  }),
  PieceCidForm: pieceCidFormSchema,
  PieceCidInfo: objectOf({
    pattern: stringSchema,
    caseInsensitive: booleanSchema,
    opaqueAccepted: booleanSchema,
    forms: arrayOf(schemaRef("PieceCidForm")),
    compute: stringSchema,
  }),
  Health: objectOf({
    status: enumOf(["ok", "degraded"]),
    storage: objectOf({ ok: booleanSchema, source: stringSchema, detail: stringSchema }),
    database: objectOf({
      ok: booleanSchema,
      persistent: booleanSchema,
      backend: enumOf(["sqlite", "postgres"]),
      detail: stringSchema,
    }),
    digests: objectOf({ backlog: integerSchema, failures: integerSchema }),
    uploads: objectOf({ inFlight: integerSchema }),
    memory: objectOf({
      rssMiB: { type: "number" },
      heapUsedMiB: { type: "number" },
      heapTotalMiB: { type: "number" },
      externalMiB: { type: "number" },
    }),
    wallet: objectOf({
      enabled: { ...booleanSchema, description: "Whether this server has a wallet tier" },
      ok: { ...booleanSchema, description: "Whether the chain's RPC answered last time" },
      chainId: nullable(integerSchema),
      rpcChainId: { ...nullable(integerSchema), description: "The chain the RPC reported" },
      lastError: nullable(stringSchema),
      lastSuccessAt: nullable(dateTimeSchema),
    }),
  }),
  Deprecation: deprecationSchema,
  Deprecations: objectOf({ deprecations: arrayOf(schemaRef("Deprecation")) }),
  OpenApiDocument: objectOf({
    openapi: stringSchema,
    info: objectOf({ title: stringSchema, version: stringSchema, description: stringSchema }),
    servers: arrayOf(objectOf({ url: uriSchema })),
    paths: { type: "object", additionalProperties: true },
    components: { type: "object", additionalProperties: true },
  }, { description: "An OpenAPI 3.1 document" }),
} satisfies Record<string, JsonSchema>;

export type SchemaName = keyof typeof COMPONENT_SCHEMAS;
