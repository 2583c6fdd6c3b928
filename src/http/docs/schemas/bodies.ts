/**
 * One JSON Schema per body the API reads or sends, published by /openapi.json
 * under components.schemas. The TypeScript type of each is written once, in
 * kernel/wire.ts (shared with the SDK); SchemaTypes below names it per schema, and
 * tests/http/openapi_test.ts generates a client from the served document and
 * checks that the type it gets for each schema is assignable both ways to
 * that type, so schema, handler and client cannot drift apart.
 */
import { SCOPES, TIERS } from "../../../domain/vocabulary.ts";
import { ERROR_STATUS } from "../../../kernel/errors.ts";
import type { ErrorCode } from "../../../kernel/errors.ts";
import { MAX_MESSAGE_CHARS, MAX_SIGNATURE_CHARS } from "../../../auth/wallet_sign_in_limits.ts";
import { DEAL_STATES, LIMIT_REFUSALS } from "../../../kernel/wire.ts";
import { handoffHealthSchema, handoffSchema } from "./handoff_schemas.ts";
import type * as Wire from "../../../kernel/wire.ts";
import type { Health } from "../../../kernel/health_wire.ts";
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
import { SESSION_AND_LINK_SCHEMAS } from "./session_bodies.ts";

/** Each published schema's TypeScript type: the handlers build their answers as these. */
export interface SchemaTypes {
  Error: Wire.ErrorBody<ErrorCode>;
  UploadResult: Wire.UploadResult;
  SignupRequest: Wire.SignupRequest;
  SignupResult: Wire.SignupResult;
  SignupVerificationSent: Wire.SignupVerificationSent;
  SignupVerifyRequest: Wire.SignupVerifyRequest;
  WalletNonce: Wire.WalletNonce;
  WalletSignInRequest: Wire.WalletSignInRequest;
  WalletSignInResult: Wire.WalletSignInResult;
  RevokeRequest: Wire.RevokeRequest;
  SessionRequest: Wire.SessionRequest;
  JwkRsa: Wire.JwkRsa;
  Jwks: Wire.Jwks;
  UploadLinkRequest: Wire.UploadLinkRequest;
  UploadLink: Wire.UploadLink;
  SessionInfo: Wire.SessionInfo;
  DealRequest: Wire.DealRequest;
  RevokeResult: Wire.RevokeResult;
  TokenInfo: Wire.TokenInfo;
  TokenList: Wire.TokenList;
  Deal: Wire.Deal;
  FilesPage: Wire.FilesPage;
  UsageDay: Wire.UsageDay;
  Usage: Wire.Usage;
  TierInfo: Wire.TierInfo;
  WalletLimits: Wire.WalletLimits;
  Limits: Wire.Limits;
  PieceCidResult: Wire.PieceCidResult;
  PieceCidForm: Wire.PieceCidForm;
  PieceCidInfo: Wire.PieceCidInfo;
  PieceStatus: Wire.PieceStatus;
  Health: Health;
  Deprecation: Wire.Deprecation;
  Deprecations: Wire.Deprecations;
  OpenApiDocument: Wire.OpenApiDocument;
}

export type SchemaName = keyof SchemaTypes;

// What /api/limits?size= names as a refusal is a code of the error table.
LIMIT_REFUSALS satisfies readonly ErrorCode[];

const dealSchema = objectOf({
  cid: stringSchema,
  dealId: stringSchema,
  size: { ...integerSchema, description: "Bytes" },
  contentType: { ...stringSchema, description: "The Content-Type given at upload" },
  filename: { ...nullable(stringSchema), description: "The decoded X-Filename, or null" },
  createdAt: dateTimeSchema,
  term: { ...stringSchema, examples: ["365 days"] },
  termEndsAt: dateTimeSchema,
  state: {
    ...enumOf(DEAL_STATES),
    description: "active until termEndsAt, then expired; deleted once its owner ended it",
  },
  deletedAt: { ...nullable(dateTimeSchema), description: "When its owner deleted it" },
  retrievalUrl: uriSchema,
  handoff: {
    ...nullable(handoffSchema),
    description: "With a hand-off to a storage provider: where the piece stands there " +
      "(null until known); absent otherwise",
  },
}, { optional: ["handoff"] });

/** One background job of the server (/healthz): how its last run ended, when the next is due. */
const jobHealthSchema = objectOf({
  name: { ...stringSchema, examples: ["gc", "leftover-sweep", "store-probe"] },
  intervalSeconds: { type: "number", description: "From the end of a run to the next" },
  running: { ...booleanSchema, description: "Whether it runs now" },
  lastRun: {
    ...nullable(objectOf({
      ok: booleanSchema,
      error: { ...nullable(stringSchema), description: "Why it failed; null when ok" },
      startedAt: dateTimeSchema,
      finishedAt: dateTimeSchema,
    })),
    description: "The last run that ended; null: none yet",
  },
  nextRunAt: { ...nullable(dateTimeSchema), description: "Null while a run is under way" },
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

/** Published as components.schemas: exactly one schema per name of SchemaTypes. */
export const COMPONENT_SCHEMAS: { readonly [name in SchemaName]: JsonSchema } = {
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
    roots: {
      ...nullable(arrayOf(stringSchema)),
      description: "A CAR upload's roots, the cids its header names; null for other uploads",
    },
    handoff: {
      ...nullable(handoffSchema),
      description: "With a hand-off to a storage provider: where the piece stands there " +
        "(null until known); absent otherwise",
    },
  }, { optional: ["handoff"] }),
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
  ...SESSION_AND_LINK_SCHEMAS,
  RevokeRequest: objectOf({
    jti: { ...stringSchema, minLength: 1, maxLength: 128, description: "The token's id" },
  }),
  DealRequest: objectOf({
    cid: {
      ...stringSchema,
      pattern: "^[a-zA-Z0-9]{8,80}$",
      description: "The cid of bytes already stored (someone's upload)",
    },
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
    dayStartUsdcBalance: {
      ...nullable(stringSchema),
      description: "The balance at the first block of the current UTC day; the daily cap " +
        "follows the smaller of the two. null: the balance now stands for it (no block yet " +
        "today, or the chain cannot tell)",
    },
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
  PieceStatus: objectOf({
    cid: { ...stringSchema, description: "The cid asked about, canonical" },
    stored: {
      ...booleanSchema,
      description: "Whether GET /p/{cid} serves it now (false: never stored, removed, or corrupt)",
    },
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
    eventLoop: objectOf({
      maxDelayMs: {
        type: "number",
        description: "The longest time between two ticks of a 10 ms timer over the last 30 to " +
          "60 s: about 10 with the event loop free; a synchronous stretch of N ms shows as N or more",
      },
    }),
    wallet: objectOf({
      enabled: { ...booleanSchema, description: "Whether this server has a wallet tier" },
      ok: { ...booleanSchema, description: "Whether the chain's RPC answered last time" },
      chainId: nullable(integerSchema),
      rpcChainId: { ...nullable(integerSchema), description: "The chain the RPC reported" },
      lastError: nullable(stringSchema),
      lastSuccessAt: nullable(dateTimeSchema),
    }),
    gc: objectOf({
      intervalHours: { type: "number", description: "Between this server's sweeps; 0: none" },
      graceDays: { ...integerSchema, description: "Days a piece outlives its last deal" },
      running: { ...booleanSchema, description: "Whether this server is sweeping now" },
      lastSweep: {
        ...nullable(objectOf({
          startedAt: dateTimeSchema,
          finishedAt: dateTimeSchema,
          removedPieces: integerSchema,
          removedBytes: integerSchema,
          removedOrphans: integerSchema,
        })),
        description: "The last sweep that finished, by any instance or main.ts gc",
      },
    }),
    jobs: {
      ...arrayOf(jobHealthSchema),
      description: "The work this server runs by itself, every so often (the jobs that are on)",
    },
    handoff: handoffHealthSchema,
  }, { optional: ["handoff"] }),
  Deprecation: deprecationSchema,
  Deprecations: objectOf({ deprecations: arrayOf(schemaRef("Deprecation")) }),
  OpenApiDocument: objectOf({
    openapi: stringSchema,
    info: objectOf({ title: stringSchema, version: stringSchema, description: stringSchema }),
    servers: arrayOf(objectOf({ url: uriSchema })),
    paths: { type: "object", additionalProperties: true },
    components: { type: "object", additionalProperties: true },
  }, { description: "An OpenAPI 3.1 document" }),
};
