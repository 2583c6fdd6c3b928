/**
 * The shape of the configuration: the frozen `Config` every part of the
 * server reads, and its sections (the upload tiers, the wallet tier, the
 * bucket). Types only, plus the closed lists of choices some settings take,
 * so any module can name a setting without pulling in the option table or
 * the parsers.
 */
import type { IpRange } from "../net/ip.ts";
import type { TlsConfig } from "../net/tls_files.ts";

export interface TierConfig {
  /** Largest single upload, in bytes. */
  maxFileBytes: number;
  /** Bytes one subject (an IP group or a user) may upload per UTC day. */
  dailyCapBytes: number;
  /** Storage term of a new deal, in days. */
  termDays: number;
  /** Most blocks one CAR upload may hold (its block index); the wallet tier shares the token's. */
  carMaxBlocks: number;
  /** Unfinished resumable uploads one subject may hold; the wallet tier shares the token's. */
  tusMaxOpen: number;
}

/**
 * The wallet tier: tokens from a Sign-In with Ethereum, daily cap from the
 * wallet's balance of a USDC-like ERC-20. No RPC URL: no wallet tier.
 */
export interface WalletConfig {
  /** JSON-RPC endpoint balances are read from; null = this server has no wallet tier. */
  rpcUrl: string | null;
  /** The chain the RPC must serve and sign-in messages must name. */
  chainId: number | null;
  /** The ERC-20 whose balanceOf is the quota (EIP-55). */
  usdcAddress: string | null;
  /** Daily upload bytes per whole token of balance. */
  bytesPerUsdc: number;
  /** How long a balance read is reused before it is read again. */
  balanceTtlMs: number;
  /** Per-file cap; null = none (a full disk still answers 507). */
  maxFileBytes: number | null;
  termDays: number;
}

/**
 * Pieces in an S3-compatible object store (Cloudflare R2, AWS S3, Ceph RGW,
 * MinIO) instead of the data directory. Credentials come from the
 * environment only (STORAGE_S3_ACCESS_KEY_ID, STORAGE_S3_SECRET_ACCESS_KEY),
 * never from a flag, so they stay out of `ps` and shell history.
 */
export interface S3Config {
  /** Base URL of the S3 API, e.g. https://<account>.r2.cloudflarestorage.com. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The X-Service-Source header of pieces served from the bucket. */
  sourceLabel: string;
}

/**
 * Handing pieces on to a Filecoin PDP storage provider (docs/handoff.md).
 * `mode` "off" (the default): nothing leaves the service; every other field
 * is then null. "pdp": every field but `payer` is set (load.ts checks it).
 */
export interface HandoffConfig {
  mode: HandoffMode;
  /** The provider's service URL (Curio's PDP API root). */
  pdpUrl: string | null;
  /** The Warm Storage contract: the EIP-712 verifying contract and the pull's record keeper. */
  recordKeeper: string | null;
  /** 314 (mainnet), 314159 (calibration) or 31415926 (devnet): the EIP-712 domain's chain. */
  chainId: number | null;
  /** Hex private key of the payer (or of a session key it authorised); 0600. */
  keyFile: string | null;
  /** The payer, when the key is a session key; null: the key's own address pays. */
  payer: string | null;
  /** The provider's payee address, which CreateDataSet is signed over. */
  payee: string | null;
  /** Lets the provider pull from an http:// base URL (local testing only). */
  allowHttpSource: boolean;
  /** How long an upload waits for the provider to hold its piece; 0 = never waits. */
  waitSeconds: number;
}

export const HANDOFF_MODES = ["off", "pdp"] as const;
export type HandoffMode = typeof HANDOFF_MODES[number];

export interface Config {
  hostname: string;
  port: number;
  /** Directory that holds the database and the pieces; null means "not configured". */
  dataDir: string | null;
  /** Public base URL without a trailing slash; null derives it from the listen address. */
  baseUrl: string | null;
  trustedProxies: readonly IpRange[];
  /**
   * Behind nginx: the location prefix a disk-stored piece's GET /p/ or /piece/ is
   * handed to (X-Accel-Redirect: prefix + its path under the data directory); null = off.
   */
  xAccelRedirect: string | null;
  sponsored: Readonly<TierConfig>;
  token: Readonly<TierConfig>;
  wallet: Readonly<WalletConfig>;
  /** Where pieces go after they are stored (nowhere by default). */
  handoff: Readonly<HandoffConfig>;
  /** How long a graceful shutdown waits for in-flight requests. */
  shutdownTimeoutMs: number;
  /** Operator-provided HMAC key file (hex); null = <data-dir>/hmac.key, created on first start. */
  hmacKeyFile: string | null;
  /** How often a running server re-reads the key file to pick up a rotation. */
  hmacKeyReloadMs: number;
  tokenLifetimeDays: number;
  /** How tokens are signed: HS256 with the HMAC key, or RS256 with the data directory's RSA keys. */
  tokenAlg: TokenAlg;
  /** Whether the deprecated ?token= form is accepted (--query-token on; off until v1 drops it). */
  queryToken: boolean;
  /** Successful signups allowed per client IP per hour. */
  signupsPerHour: number;
  /** Refuse cids the server cannot verify (opaque names). */
  requireVerifiableCids: boolean;
  /** Workers that hash piece cids; 0 hashes on the main thread; null = one per CPU. */
  hashWorkers: number | null;
  /** Memory for small pieces (≤ 64 KiB) served without touching the disk; 0 disables. */
  smallPieceCacheBytes: number;
  /** An upload whose body sends nothing for this long is abandoned (408). */
  bodyIdleTimeoutMs: number;
  /** Least average rate of a request body once bodyRateGraceMs is over (408 below); 0 = none. */
  bodyMinBytesPerSecond: number;
  /** Time a body may make the server wait before its rate is held to bodyMinBytesPerSecond. */
  bodyRateGraceMs: number;
  /** Least average rate a client takes an answer at once bodyRateGraceMs is over; 0 = none. */
  sendMinBytesPerSecond: number;
  /** How long a write waits for SQLite's lock before answering 503. */
  dbBusyTimeoutMs: number;
  logRequests: boolean;
  /**
   * Who may mint a token over HTTP: anyone ("open"), whoever proves the e-mail
   * address with a mailed code ("verify"), or nobody ("closed": `token mint`).
   */
  signup: SignupMode;
  /** The operator's mail server for signup codes, smtp://user:pass@host:port; null = none. */
  smtpUrl: string | null;
  /** Sender address of signup mails. */
  mailFrom: string | null;
  /** How far ahead of now a deal's term may end, in days (extensions are clamped to it). */
  maxTermDays: number;
  /** Memory all uploads in flight may pin together for their read buffers. */
  uploadMemoryBytes: number;
  /** Uploads one client address may have in flight at once. */
  maxUploadsPerClient: number;
  /** Most blocks one CAR answer of the IPFS gateway walks. */
  ipfsMaxWalkBlocks: number;
  /** Serve HTTPS with these files (re-read when they change); null = plain HTTP. */
  tls: Readonly<TlsConfig> | null;
  /** Serve TLS on a public address despite handshakes that cannot be timed out. */
  allowUnboundedTlsHandshakes: boolean;
  /** Open connections at most (the own accept loop; see net/accept_loop.ts). */
  maxConnections: number;
  /** Open connections per client address; trusted proxies are exempt. */
  maxConnectionsPerClient: number;
  /** A connection's first request head must be complete this long after accept. */
  headerTimeoutMs: number;
  /** A kept-alive connection's next request head must be complete this long after an answer. */
  keepAliveTimeoutMs: number;
  /** false: Deno.serve accepts, without the bounds above. */
  connectionBounds: boolean;
  /** Log lines for people ("text"), for machines ("json"), or text on a terminal ("auto"). */
  logFormat: LogFormat;
  /** Serve GET /metrics (Prometheus text format). */
  metricsEnabled: boolean;
  /** Bearer token /metrics requires; null = /metrics is public. */
  metricsToken: string | null;
  /** Hours between background scrubs of every piece; 0 = no background scrub. */
  scrubIntervalHours: number;
  /** Bytes per second a scrub reads at most, so serving keeps the disk. */
  scrubBytesPerSecond: number;
  /** Days a piece is kept after its last deal ended (expired or deleted). */
  retentionGraceDays: number;
  /** Hours between this server's garbage-collection sweeps; 0 = none. */
  gcIntervalHours: number;
  /** Pieces per second a sweep removes at most, so serving keeps the store. */
  gcRemovalsPerSecond: number;
  /** A PostgreSQL URL shared by every instance; null = SQLite in the data directory. */
  databaseUrl: string | null;
  /** Longest one PostgreSQL call may take before it fails (the request answers 503). */
  dbTimeoutMs: number;
  /** Where pieces live: the data directory ("disk") or an S3-compatible bucket ("s3"). */
  store: StoreKind;
  /** Set exactly when store is "s3". */
  s3: Readonly<S3Config> | null;
  /** Bound of one S3 request until its answer (a silent bucket is found sooner: s3 driver). */
  s3TimeoutMs: number;
}

export const STORE_KINDS = ["disk", "s3"] as const;
export type StoreKind = typeof STORE_KINDS[number];

export const LOG_FORMATS = ["auto", "text", "json"] as const;
export type LogFormat = typeof LOG_FORMATS[number];

export const TOKEN_ALGS = ["HS256", "RS256"] as const;
export type TokenAlg = typeof TOKEN_ALGS[number];

export const SIGNUP_MODES = ["open", "verify", "closed"] as const;
export type SignupMode = typeof SIGNUP_MODES[number];
