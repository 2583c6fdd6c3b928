/**
 * Configuration: every setting is a flag and a `STORAGE_`-prefixed environment
 * variable; the flag wins. One table (OPTIONS) gives each setting its flag,
 * variable, default (the text a user would type, parsed like user input) and
 * help line; argv is parsed by node:util parseArgs from that table. `loadConfig`
 * is pure (arguments and environment in, frozen object out) so tests build
 * configs without touching the process.
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";
import { getAddress, isAddress } from "viem";
import { parseIpRanges } from "./net/ip.ts";
import type { IpRange } from "./net/ip.ts";
import type { TlsConfig } from "./net/tls_files.ts";

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;

export interface TierConfig {
  /** Largest single upload, in bytes. */
  maxFileBytes: number;
  /** Bytes one subject (an IP group or a user) may upload per UTC day. */
  dailyCapBytes: number;
  /** Storage term of a new deal, in days. */
  termDays: number;
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

export interface Config {
  hostname: string;
  port: number;
  /** Directory that holds the database and the pieces; null means "not configured". */
  dataDir: string | null;
  /** Public base URL without a trailing slash; null derives it from the listen address. */
  baseUrl: string | null;
  trustedProxies: readonly IpRange[];
  sponsored: Readonly<TierConfig>;
  token: Readonly<TierConfig>;
  wallet: Readonly<WalletConfig>;
  /** How long a graceful shutdown waits for in-flight requests. */
  shutdownTimeoutMs: number;
  /** Operator-provided HMAC key file (hex); null = <data-dir>/hmac.key, created on first start. */
  hmacKeyFile: string | null;
  /** How often a running server re-reads the key file to pick up a rotation. */
  hmacKeyReloadMs: number;
  tokenLifetimeDays: number;
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
  /** Serve HTTPS with these files (re-read when they change); null = plain HTTP. */
  tls: Readonly<TlsConfig> | null;
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
  /** A PostgreSQL URL shared by every instance; null = SQLite in the data directory. */
  databaseUrl: string | null;
  /** Where pieces live: the data directory ("disk") or an S3-compatible bucket ("s3"). */
  store: StoreKind;
  /** Set exactly when store is "s3". */
  s3: Readonly<S3Config> | null;
}

export const STORE_KINDS = ["disk", "s3"] as const;
export type StoreKind = typeof STORE_KINDS[number];

export const LOG_FORMATS = ["auto", "text", "json"] as const;
export type LogFormat = typeof LOG_FORMATS[number];

export const SIGNUP_MODES = ["open", "verify", "closed"] as const;
export type SignupMode = typeof SIGNUP_MODES[number];

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

type Setter = (config: MutableConfig, value: string, name: string) => void;
/** Config while it is assembled: TLS arrives as two flags and becomes `tls` at the end. */
type MutableConfig = Omit<Writable, "tls" | "s3"> & {
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  s3Endpoint: string | null;
  s3Bucket: string | null;
  s3Region: string;
  s3SourceLabel: string;
};
type Writable = {
  -readonly [K in keyof Config]: K extends "sponsored" | "token" | "wallet"
    ? { -readonly [P in keyof Config[K]]: Config[K][P] }
    : Config[K];
};

interface OptionSpec {
  flag: string;
  env: string;
  placeholder: string;
  description: string;
  /**
   * The default, written once, as the text a user would type. It goes through
   * `apply` like a flag or a variable (before them), and `--help` prints it, so
   * the two cannot drift apart.
   *
   * `""` means "not set": `apply` maps the empty text to the derived behaviour
   * (null in Config, e.g. a base URL taken from the listen address), exactly as
   * it does for a user who passes `--flag=`. Such an option says in
   * `defaultHelp` what "not set" amounts to; `--help` shows that text instead.
   */
  default: string;
  /** Only with `default: ""`: what the unset option means, for `--help`. */
  defaultHelp?: string;
  apply: Setter;
}

/** The table of every setting; the defaults, the argv parser and `--help` come from it. */
export const OPTIONS: readonly OptionSpec[] = [
  {
    flag: "hostname",
    env: "STORAGE_HOSTNAME",
    placeholder: "HOST",
    description: "Address to listen on",
    default: "127.0.0.1",
    apply: (c, v, n) => c.hostname = requireNonEmpty(v, n),
  },
  {
    flag: "port",
    env: "STORAGE_PORT",
    placeholder: "PORT",
    description: "TCP port; 0 picks a free one",
    default: "8080",
    apply: (c, v, n) => c.port = parseInteger(v, n, { min: 0, max: 65535 }),
  },
  {
    flag: "data-dir",
    env: "STORAGE_DATA_DIR",
    placeholder: "DIR",
    description: "Directory for the database and pieces; empty = no storage bound",
    default: "./data",
    apply: (c, v) => c.dataDir = v === "" ? null : v,
  },
  {
    flag: "base-url",
    env: "STORAGE_BASE_URL",
    placeholder: "URL",
    description: "Public URL used in retrievalUrl",
    default: "",
    defaultHelp: "http://<hostname>:<port>",
    apply: (c, v, n) => c.baseUrl = v === "" ? null : parseBaseUrl(v, n),
  },
  {
    flag: "trusted-proxies",
    env: "STORAGE_TRUSTED_PROXIES",
    placeholder: "LIST",
    description: "Comma-separated IPs/CIDRs whose X-Forwarded-For is believed",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.trustedProxies = parseProxyList(v, n),
  },
  {
    flag: "sponsored-max-file-size",
    env: "STORAGE_SPONSORED_MAX_FILE_SIZE",
    placeholder: "SIZE",
    description: "Per-file cap of sponsored uploads",
    default: "100MiB",
    apply: (c, v, n) => c.sponsored.maxFileBytes = parseSize(v, n),
  },
  {
    flag: "sponsored-daily-cap",
    env: "STORAGE_SPONSORED_DAILY_CAP",
    placeholder: "SIZE",
    description: "Sponsored bytes per client IP (IPv6: per /64) per UTC day",
    default: "200MiB",
    apply: (c, v, n) => c.sponsored.dailyCapBytes = parseSize(v, n),
  },
  {
    flag: "sponsored-term-days",
    env: "STORAGE_SPONSORED_TERM_DAYS",
    placeholder: "DAYS",
    description: "Storage term of sponsored deals",
    default: "30",
    apply: (c, v, n) => c.sponsored.termDays = parseInteger(v, n, { min: 1, max: 36500 }),
  },
  {
    flag: "token-max-file-size",
    env: "STORAGE_TOKEN_MAX_FILE_SIZE",
    placeholder: "SIZE",
    description: "Per-file cap of token uploads",
    default: "5GiB",
    apply: (c, v, n) => c.token.maxFileBytes = parseSize(v, n),
  },
  {
    flag: "token-daily-cap",
    env: "STORAGE_TOKEN_DAILY_CAP",
    placeholder: "SIZE",
    description: "Largest daily quota a token may carry (quotaMb)",
    default: "1GiB",
    apply: (c, v, n) => c.token.dailyCapBytes = parseSize(v, n),
  },
  {
    flag: "token-term-days",
    env: "STORAGE_TOKEN_TERM_DAYS",
    placeholder: "DAYS",
    description: "Storage term of token deals",
    default: "365",
    apply: (c, v, n) => c.token.termDays = parseInteger(v, n, { min: 1, max: 36500 }),
  },
  {
    flag: "token-lifetime-days",
    env: "STORAGE_TOKEN_LIFETIME_DAYS",
    placeholder: "DAYS",
    description: "Lifetime of a new token (the key rotation period)",
    default: "90",
    apply: (c, v, n) => c.tokenLifetimeDays = parseInteger(v, n, { min: 1, max: 3650 }),
  },
  {
    flag: "hmac-key-file",
    env: "STORAGE_HMAC_KEY_FILE",
    placeholder: "FILE",
    description: "HMAC key as hex (64+ digits); the default one is made on first start",
    default: "",
    defaultHelp: "<data-dir>/hmac.key",
    apply: (c, v) => c.hmacKeyFile = v === "" ? null : v,
  },
  {
    flag: "hmac-key-reload",
    env: "STORAGE_HMAC_KEY_RELOAD",
    placeholder: "SECONDS",
    description: "How often the key file is re-read to pick up a rotation",
    default: "2",
    apply: (c, v, n) => c.hmacKeyReloadMs = parseInteger(v, n, { min: 1, max: 3600 }) * 1000,
  },
  {
    flag: "signup-limit",
    env: "STORAGE_SIGNUP_LIMIT",
    placeholder: "COUNT",
    description: "Signups per client IP per hour",
    default: "20",
    apply: (c, v, n) => c.signupsPerHour = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  {
    flag: "require-verifiable-cids",
    env: "STORAGE_REQUIRE_VERIFIABLE_CIDS",
    placeholder: "BOOL",
    description: "Refuse opaque cids: accept only PieceCIDv2/v1 and sha2-256 CIDv1",
    default: "false",
    apply: (c, v, n) => c.requireVerifiableCids = parseBoolean(v, n),
  },
  {
    flag: "hash-workers",
    env: "STORAGE_HASH_WORKERS",
    placeholder: "COUNT",
    description: "Worker threads that verify piece cids (0 = on the main thread)",
    default: "",
    defaultHelp: "number of CPUs",
    apply: (c, v, n) => c.hashWorkers = v === "" ? null : parseInteger(v, n, { min: 0, max: 64 }),
  },
  {
    flag: "small-piece-cache",
    env: "STORAGE_SMALL_PIECE_CACHE",
    placeholder: "SIZE",
    description: "Memory for pieces of at most 64 KiB served without disk access (0 = off)",
    default: "64MiB",
    apply: (c, v, n) => c.smallPieceCacheBytes = v.trim() === "0" ? 0 : parseSize(v, n),
  },
  {
    flag: "body-idle-timeout",
    env: "STORAGE_BODY_IDLE_TIMEOUT",
    placeholder: "SECONDS",
    description: "Abandon an upload whose body sends nothing for this long (408)",
    default: "30",
    apply: (c, v, n) => c.bodyIdleTimeoutMs = parseInteger(v, n, { min: 1, max: 86400 }) * 1000,
  },
  {
    flag: "db-busy-timeout",
    env: "STORAGE_DB_BUSY_TIMEOUT",
    placeholder: "MS",
    description: "How long a database write waits for a lock before answering 503",
    default: "5000",
    apply: (c, v, n) => c.dbBusyTimeoutMs = parseInteger(v, n, { min: 0, max: 600_000 }),
  },
  {
    flag: "shutdown-timeout",
    env: "STORAGE_SHUTDOWN_TIMEOUT",
    placeholder: "SECONDS",
    description: "Grace period for in-flight requests on SIGINT/SIGTERM",
    default: "30",
    apply: (c, v, n) => c.shutdownTimeoutMs = parseInteger(v, n, { min: 0, max: 3600 }) * 1000,
  },
  {
    flag: "signup",
    env: "STORAGE_SIGNUP",
    placeholder: "MODE",
    description: "open: anyone mints tokens; verify: e-mail code first; closed: `token mint` only",
    default: "open",
    apply: (c, v, n) => c.signup = parseChoice(v, n, SIGNUP_MODES),
  },
  {
    flag: "smtp-url",
    env: "STORAGE_SMTP_URL",
    placeholder: "URL",
    description: "Mail server for signup codes, smtp://user:pass@host:port (STARTTLS when offered)",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.smtpUrl = v === "" ? null : parseSmtpUrl(v, n),
  },
  {
    flag: "mail-from",
    env: "STORAGE_MAIL_FROM",
    placeholder: "ADDRESS",
    description: "Sender address of signup mails",
    default: "",
    defaultHelp: "none",
    apply: (c, v) => c.mailFrom = v === "" ? null : v,
  },
  {
    flag: "max-term-days",
    env: "STORAGE_MAX_TERM_DAYS",
    placeholder: "DAYS",
    description: "Latest a deal's term may end, counted from now (extensions are clamped)",
    default: "1826",
    apply: (c, v, n) => c.maxTermDays = parseInteger(v, n, { min: 1, max: 36500 }),
  },
  {
    flag: "upload-memory",
    env: "STORAGE_UPLOAD_MEMORY",
    placeholder: "SIZE",
    description: "Memory all uploads in flight may pin together; past it new ones get 503",
    default: "128MiB",
    apply: (c, v, n) => c.uploadMemoryBytes = parseSize(v, n),
  },
  {
    flag: "max-uploads-per-client",
    env: "STORAGE_MAX_UPLOADS_PER_CLIENT",
    placeholder: "COUNT",
    description: "Uploads one client address may have in flight at once (429 past it)",
    default: "16",
    apply: (c, v, n) => c.maxUploadsPerClient = parseInteger(v, n, { min: 1, max: 100_000 }),
  },
  {
    flag: "wallet-rpc-url",
    env: "STORAGE_WALLET_RPC_URL",
    placeholder: "URL",
    description: "JSON-RPC endpoint of the wallet tier's chain (http or https)",
    default: "",
    defaultHelp: "none: no wallet tier",
    apply: (c, v, n) => c.wallet.rpcUrl = v === "" ? null : parseRpcUrl(v, n),
  },
  {
    flag: "wallet-chain-id",
    env: "STORAGE_WALLET_CHAIN_ID",
    placeholder: "ID",
    description: "Chain id the RPC must serve and sign-in messages must name",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) =>
      c.wallet.chainId = v === "" ? null : parseInteger(v, n, { min: 1, max: 2 ** 53 - 1 }),
  },
  {
    flag: "wallet-usdc-address",
    env: "STORAGE_WALLET_USDC_ADDRESS",
    placeholder: "ADDRESS",
    description: "ERC-20 (USDC) contract whose balanceOf sets a wallet's daily cap",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.wallet.usdcAddress = v === "" ? null : parseAddress(v, n),
  },
  {
    flag: "wallet-bytes-per-usdc",
    env: "STORAGE_WALLET_BYTES_PER_USDC",
    placeholder: "SIZE",
    description: "Daily upload bytes per 1 USDC of balance",
    default: "1GiB",
    apply: (c, v, n) => c.wallet.bytesPerUsdc = parseSize(v, n),
  },
  {
    flag: "wallet-balance-ttl",
    env: "STORAGE_WALLET_BALANCE_TTL",
    placeholder: "SECONDS",
    description: "How long a wallet's balance is reused before it is read again",
    default: "30",
    apply: (c, v, n) => c.wallet.balanceTtlMs = parseInteger(v, n, { min: 0, max: 3600 }) * 1000,
  },
  {
    flag: "wallet-max-file-size",
    env: "STORAGE_WALLET_MAX_FILE_SIZE",
    placeholder: "SIZE",
    description: "Per-file cap of wallet uploads",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.wallet.maxFileBytes = v === "" ? null : parseSize(v, n),
  },
  {
    flag: "wallet-term-days",
    env: "STORAGE_WALLET_TERM_DAYS",
    placeholder: "DAYS",
    description: "Storage term of wallet deals",
    default: "365",
    apply: (c, v, n) => c.wallet.termDays = parseInteger(v, n, { min: 1, max: 36500 }),
  },
  {
    flag: "tls-cert",
    env: "STORAGE_TLS_CERT",
    placeholder: "FILE",
    description: "Certificate chain (PEM) to serve HTTPS with; re-read when it changes",
    default: "",
    defaultHelp: "none: plain HTTP",
    apply: (c, v) => c.tlsCertFile = v === "" ? null : v,
  },
  {
    flag: "tls-key",
    env: "STORAGE_TLS_KEY",
    placeholder: "FILE",
    description: "Private key (PEM) of --tls-cert",
    default: "",
    defaultHelp: "none",
    apply: (c, v) => c.tlsKeyFile = v === "" ? null : v,
  },
  {
    flag: "log-format",
    env: "STORAGE_LOG_FORMAT",
    placeholder: "FORMAT",
    description: "text (for people), json (for machines), or auto: text on a terminal",
    default: "auto",
    apply: (c, v, n) => c.logFormat = parseChoice(v, n, LOG_FORMATS),
  },
  {
    flag: "metrics",
    env: "STORAGE_METRICS",
    placeholder: "BOOL",
    description: "Serve GET /metrics in the Prometheus text format",
    default: "true",
    apply: (c, v, n) => c.metricsEnabled = parseBoolean(v, n),
  },
  {
    flag: "metrics-token",
    env: "STORAGE_METRICS_TOKEN",
    placeholder: "TOKEN",
    description: "Bearer token GET /metrics requires (16+ characters)",
    default: "",
    defaultHelp: "none: /metrics is public",
    apply: (c, v, n) => c.metricsToken = v === "" ? null : parseSecret(v, n),
  },
  {
    flag: "scrub-interval",
    env: "STORAGE_SCRUB_INTERVAL",
    placeholder: "HOURS",
    description: "Hours between background scrubs re-hashing every piece (0 = off)",
    default: "0",
    apply: (c, v, n) => c.scrubIntervalHours = parseInteger(v, n, { min: 0, max: 8760 }),
  },
  {
    flag: "scrub-rate",
    env: "STORAGE_SCRUB_RATE",
    placeholder: "SIZE",
    description: "Bytes per second a scrub reads at most",
    default: "32MiB",
    apply: (c, v, n) => c.scrubBytesPerSecond = parseSize(v, n),
  },
  {
    flag: "database",
    env: "STORAGE_DATABASE",
    placeholder: "URL",
    description:
      "PostgreSQL shared by every instance, postgres://user:pass@host/db (prefer the env var)",
    default: "",
    defaultHelp: "SQLite in the data directory",
    apply: (c, v, n) => c.databaseUrl = v === "" ? null : parsePostgresUrl(v, n),
  },
  {
    flag: "store",
    env: "STORAGE_STORE",
    placeholder: "disk|s3",
    description: "Where pieces live: the data directory, or an S3-compatible bucket (--s3-*)",
    default: "disk",
    apply: (c, v, n) => c.store = parseChoice(v, n, STORE_KINDS),
  },
  {
    flag: "s3-endpoint",
    env: "STORAGE_S3_ENDPOINT",
    placeholder: "URL",
    description:
      "S3 API base URL (path-style requests); keys from STORAGE_S3_ACCESS_KEY_ID/_SECRET",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.s3Endpoint = v === "" ? null : parseHttpUrl(v, n),
  },
  {
    flag: "s3-bucket",
    env: "STORAGE_S3_BUCKET",
    placeholder: "NAME",
    description: "Bucket the pieces are kept in (it must exist)",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.s3Bucket = v === "" ? null : parseBucketName(v, n),
  },
  {
    flag: "s3-region",
    env: "STORAGE_S3_REGION",
    placeholder: "REGION",
    description: "Region requests are signed for (R2: auto)",
    default: "auto",
    apply: (c, v) => c.s3Region = v,
  },
  {
    flag: "s3-source",
    env: "STORAGE_S3_SOURCE",
    placeholder: "LABEL",
    description: "X-Service-Source of pieces served from the bucket",
    default: "r2",
    apply: (c, v, n) => c.s3SourceLabel = parseSourceLabel(v, n),
  },
  {
    flag: "log-requests",
    env: "STORAGE_LOG_REQUESTS",
    placeholder: "BOOL",
    description: "One JSON log line per request on stderr",
    default: "true",
    apply: (c, v, n) => c.logRequests = parseBoolean(v, n),
  },
];

/** Environment variable names the service reads (for `--allow-env` and docs). */
/** Environment variables that hold the bucket's credentials (never flags). */
export const S3_CREDENTIAL_ENV = {
  accessKeyId: "STORAGE_S3_ACCESS_KEY_ID",
  secretAccessKey: "STORAGE_S3_SECRET_ACCESS_KEY",
} as const;

export const ENV_NAMES: readonly string[] = [
  ...OPTIONS.map((o) => o.env),
  ...Object.values(S3_CREDENTIAL_ENV),
];

export type LoadResult = { kind: "config"; config: Config } | { kind: "help"; text: string };

/**
 * Builds the configuration from command-line arguments and environment.
 *
 * @example loadConfig(["--port", "0", "--data-dir=/tmp/x"], {})
 */
export function loadConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): LoadResult {
  const flags = parseFlags(args);
  if (flags === "help") return { kind: "help", text: helpText() };
  // Defaults, then the environment, then the flags (in the order given): the last one wins.
  const config = { sponsored: {}, token: {}, wallet: {} } as MutableConfig;
  for (const option of OPTIONS) {
    option.apply(config, option.default, `the default of --${option.flag}`);
  }
  for (const option of OPTIONS) {
    const value = env[option.env];
    if (value !== undefined) option.apply(config, value, option.env);
  }
  for (const { option, value } of flags) option.apply(config, value, `--${option.flag}`);
  if (config.token.dailyCapBytes % MIB !== 0) {
    throw new ConfigError("--token-daily-cap must be a whole number of MiB (quotaMb is in MiB)");
  }
  for (
    const [flag, days] of [
      ["--sponsored-term-days", config.sponsored.termDays],
      ["--token-term-days", config.token.termDays],
      ["--wallet-term-days", config.wallet.termDays],
    ] as const
  ) {
    if (days > config.maxTermDays) {
      throw new ConfigError(
        `${flag} (${days}) must not exceed --max-term-days (${config.maxTermDays})`,
      );
    }
  }
  if (config.signup === "verify" && (config.smtpUrl === null || config.mailFrom === null)) {
    throw new ConfigError("--signup verify needs --smtp-url and --mail-from to send codes");
  }
  checkWallet(config.wallet);
  const s3 = s3ConfigOf(config, env);
  const {
    tlsCertFile,
    tlsKeyFile,
    s3Endpoint: _endpoint,
    s3Bucket: _bucket,
    s3Region: _region,
    s3SourceLabel: _label,
    ...rest
  } = config;
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) {
    throw new ConfigError("--tls-cert and --tls-key go together: give both, or neither");
  }
  const tls = tlsCertFile === null || tlsKeyFile === null
    ? null
    : { certFile: tlsCertFile, keyFile: tlsKeyFile };
  return { kind: "config", config: deepFreeze({ ...rest, tls, s3 }) };
}

/** --store s3 needs an endpoint, a bucket and both credentials; --s3-* without it is a mistake. */
function s3ConfigOf(
  config: MutableConfig,
  env: Readonly<Record<string, string | undefined>>,
): S3Config | null {
  if (config.store !== "s3") {
    if (config.s3Endpoint !== null || config.s3Bucket !== null) {
      throw new ConfigError("--s3-endpoint and --s3-bucket are for --store s3");
    }
    return null;
  }
  const accessKeyId = env[S3_CREDENTIAL_ENV.accessKeyId] ?? "";
  const secretAccessKey = env[S3_CREDENTIAL_ENV.secretAccessKey] ?? "";
  const missing = [
    ["--s3-endpoint", config.s3Endpoint ?? ""],
    ["--s3-bucket", config.s3Bucket ?? ""],
    [S3_CREDENTIAL_ENV.accessKeyId, accessKeyId],
    [S3_CREDENTIAL_ENV.secretAccessKey, secretAccessKey],
  ].filter(([, value]) => value === "").map(([name]) => name);
  if (missing.length > 0) {
    throw new ConfigError(`--store s3 needs ${missing.join(", ")}`);
  }
  return {
    endpoint: config.s3Endpoint!,
    bucket: config.s3Bucket!,
    region: config.s3Region,
    accessKeyId,
    secretAccessKey,
    sourceLabel: config.s3SourceLabel,
  };
}

/** The wallet tier needs all three of RPC, chain and token, or none of them. */
function checkWallet(wallet: WalletConfig): void {
  const given = [
    ["--wallet-rpc-url", wallet.rpcUrl],
    ["--wallet-chain-id", wallet.chainId],
    ["--wallet-usdc-address", wallet.usdcAddress],
  ] as const;
  const missing = given.filter(([, value]) => value === null).map(([flag]) => flag);
  if (missing.length > 0 && missing.length < given.length) {
    throw new ConfigError(
      `The wallet tier needs --wallet-rpc-url, --wallet-chain-id and --wallet-usdc-address ` +
        `together; missing ${missing.join(", ")}`,
    );
  }
}

/** parseArgs options from the table: every setting takes a value (BOOL ones too: `true`/`false`). */
const PARSE_OPTIONS: ParseArgsOptionsConfig = {
  ...Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }])),
  help: { type: "boolean", short: "h" },
};
const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

/** The flags in the order given, or "help"; a malformed command line is a ConfigError. */
function parseFlags(args: readonly string[]): { option: OptionSpec; value: string }[] | "help" {
  let tokens;
  try {
    ({ tokens } = parseArgs({
      args: [...args],
      options: PARSE_OPTIONS,
      strict: true,
      allowPositionals: false,
      tokens: true,
    }));
  } catch (error) {
    throw argumentError(error);
  }
  const flags: { option: OptionSpec; value: string }[] = [];
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (token.name === "help") return "help";
    // Strict parsing has refused unknown flags and string flags without a value.
    flags.push({ option: BY_FLAG.get(token.name)!, value: token.value! });
  }
  return flags;
}

/** Rewords parseArgs' errors (ERR_PARSE_ARGS_*) as ConfigErrors that name the flag. */
function argumentError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string" || !code.startsWith("ERR_PARSE_ARGS_")) return error;
  const message = (error as Error).message;
  // parseArgs quotes what it refuses: '--bogus', '--port <value>', '-h, --help', 'x'.
  const quoted = /'([^']*)'/.exec(message)?.[1].replace(/ <value>$/, "").split(", ").at(-1);
  if (quoted === undefined) return new ConfigError(`${message} (see --help)`);
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    return new ConfigError(`Unknown flag ${quoted} (see --help)`);
  }
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    return new ConfigError(`Unexpected argument: ${quoted} (see --help)`);
  }
  if (/does not take an argument/.test(message)) {
    return new ConfigError(`Flag ${quoted} takes no value`);
  }
  if (/argument is ambiguous/.test(message)) {
    // `--port --hostname x`: a forgotten value, or one starting with "-".
    return new ConfigError(
      `Flag ${quoted} needs a value (for a value starting with "-", write ${quoted}=VALUE)`,
    );
  }
  if (/argument missing/.test(message)) return new ConfigError(`Flag ${quoted} needs a value`);
  return new ConfigError(`${message} (see --help)`);
}

export function helpText(): string {
  const rows = OPTIONS.map((o) => {
    const left = `  --${o.flag} ${o.placeholder}`.padEnd(38);
    const shown = o.default === "" ? o.defaultHelp : o.default;
    return `${left}${o.description} (env ${o.env}, default ${shown})`;
  });
  return [
    "Content storage staging service",
    "",
    "Usage: main.ts [serve] [flags]      run the service",
    "       main.ts rotate-key [flags]   replace the HMAC key; every issued token becomes invalid",
    "       main.ts migrate [flags]      move a data directory into PostgreSQL and/or a bucket",
    "",
    "Flags (each also read from the environment variable shown; a flag wins):",
    ...rows,
    "  --help                              Show this text",
    "",
    "Sizes take a unit: B, KiB, MiB, GiB, TiB (e.g. 100MiB); a bare number is bytes.",
  ].join("\n");
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kib: KIB,
  mib: MIB,
  gib: GIB,
  tib: 1024 * GIB,
};

/** Parses "100MiB", "5GiB" or a bare byte count. */
export function parseSize(value: string, name: string): number {
  const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(value);
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) {
    throw new ConfigError(`${name} must be a size like 100MiB or 1048576, got "${value}"`);
  }
  const bytes = Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ConfigError(`${name} must be a positive size, got "${value}"`);
  }
  return bytes;
}

function parseInteger(value: string, name: string, range: { min: number; max: number }): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new ConfigError(
      `${name} must be a whole number from ${range.min} to ${range.max}, got "${value}"`,
    );
  }
  return n;
}

function parseBoolean(value: string, name: string): boolean {
  const v = value.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

function parseChoice<T extends string>(value: string, name: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) {
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${value}"`);
  }
  return value as T;
}

/** A URL whose scheme is one of `schemes`; the text is returned as given. */
function parseUrlOf(value: string, name: string, schemes: string[], example: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // Reported below, with the example.
  }
  if (url === null || !schemes.includes(url.protocol.slice(0, -1))) {
    throw new ConfigError(`${name} must be a URL like ${example}`);
  }
  return value;
}

function parseSmtpUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["smtp", "smtps"], "smtp://user:pass@mail.example.org:587");
}

function parseRpcUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["http", "https"], "http://127.0.0.1:8545");
}

function parseHttpUrl(value: string, name: string): string {
  return parseUrlOf(value, name, ["http", "https"], "https://s3.example.org").replace(/\/+$/, "");
}

function parsePostgresUrl(value: string, name: string): string {
  const example = "postgres://user:pass@host:5432/db";
  parseUrlOf(value, name, ["postgres", "postgresql"], example);
  // The client would otherwise ask the OS for a user name, which the server may not read.
  if (new URL(value).username === "") throw new ConfigError(`${name} must name a user: ${example}`);
  return value;
}

/** S3 bucket naming rules (3–63 lowercase letters, digits, dots, hyphens). */
function parseBucketName(value: string, name: string): string {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(value)) {
    throw new ConfigError(`${name} must be a bucket name: 3-63 lowercase letters, digits, . or -`);
  }
  return value;
}

/** A header value: a short token, so it cannot break the response. */
function parseSourceLabel(value: string, name: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,31}$/i.test(value)) {
    throw new ConfigError(`${name} must be 1-32 letters, digits, _ or -`);
  }
  return value;
}

/** An Ethereum address, returned EIP-55 checksummed; a mixed-case one must carry a valid checksum. */
function parseAddress(value: string, name: string): string {
  // isAddress checks the EIP-55 checksum of a mixed-case address; all-lowercase has none.
  if (!/^0x[0-9a-fA-F]{40}$/.test(value) || !isAddress(value)) {
    throw new ConfigError(`${name} must be a 0x-prefixed 20-byte address with a valid checksum`);
  }
  return getAddress(value);
}

function parseSecret(value: string, name: string): string {
  if (value.length < 16 || /\s/.test(value)) {
    throw new ConfigError(`${name} must be at least 16 characters without spaces`);
  }
  return value;
}

function requireNonEmpty(value: string, name: string): string {
  if (value.trim() === "") throw new ConfigError(`${name} must not be empty`);
  return value.trim();
}

function parseBaseUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  if (url.search || url.hash) throw new ConfigError(`${name} must not have a query or fragment`);
  return url.href.replace(/\/+$/, "");
}

function parseProxyList(value: string, name: string): IpRange[] {
  try {
    return parseIpRanges(value);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}

function deepFreeze<T extends object>(value: T): T {
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    // Typed arrays (IP range bytes) cannot be frozen; nothing hands them out for writing.
    if (child && typeof child === "object" && !ArrayBuffer.isView(child)) {
      deepFreeze(child as object);
    }
  }
  return Object.freeze(value);
}
