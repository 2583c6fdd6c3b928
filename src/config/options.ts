/**
 * The option table: every setting the server takes, as a flag and a
 * `STORAGE_`-prefixed environment variable, with its default (the text a user
 * would type, parsed like user input), its `--help` line, and how its value
 * is parsed into the config. The argv parser, the defaults and `--help` all
 * come from this one table, so they cannot drift apart.
 *
 * It is long because it is declarative: one entry per setting, grouped by
 * area under a heading. The order of the entries is the order of `--help` (and
 * of the checks on the defaults and the environment), kept as released, which
 * is why the request log comes last, away from the other logs.
 */
import {
  parseAccelPrefix,
  parseAddress,
  parseBaseUrl,
  parseBoolean,
  parseBucketName,
  parseChoice,
  parseHttpUrl,
  parseInteger,
  parsePostgresUrl,
  parseProxyList,
  parseRpcUrl,
  parseSecret,
  parseSize,
  parseSmtpUrl,
  parseSourceLabel,
  requireNonEmpty,
} from "./parse.ts";
import { HANDOFF_MODES, LOG_FORMATS, SIGNUP_MODES, STORE_KINDS, TOKEN_ALGS } from "./types.ts";
import type { Config } from "./types.ts";

/** The chains synapse-core signs for: its typed data knows no other. */
const PDP_CHAIN_IDS = ["314", "314159", "31415926"] as const;

export type Setter = (config: MutableConfig, value: string, name: string) => void;
/** Config while it is assembled: TLS arrives as two flags and becomes `tls` at the end. */
export type MutableConfig = Omit<Writable, "tls" | "s3"> & {
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  s3Endpoint: string | null;
  s3Bucket: string | null;
  s3Region: string;
  s3SourceLabel: string;
};
type Writable = {
  -readonly [K in keyof Config]: K extends "sponsored" | "token" | "wallet" | "handoff"
    ? { -readonly [P in keyof Config[K]]: Config[K][P] }
    : Config[K];
};

export interface OptionSpec {
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
  // Where the server listens, under which public URL, and where it keeps its data.
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
    flag: "x-accel-redirect",
    env: "STORAGE_X_ACCEL_REDIRECT",
    placeholder: "PREFIX",
    description: "Behind nginx: let it send disk-stored pieces (X-Accel-Redirect: PREFIX<path " +
      "under the data dir>; see deploy/nginx.conf)",
    default: "",
    defaultHelp: "off",
    apply: (c, v, n) => c.xAccelRedirect = v === "" ? null : parseAccelPrefix(v, n),
  },
  // Upload tiers: anonymous clients (sponsored, per IP) and token holders (per user).
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
  // Tokens: how long one lives, the key that signs them, how fast they are handed out.
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
    flag: "token-alg",
    env: "STORAGE_TOKEN_ALG",
    placeholder: "ALG",
    description:
      "HS256 (the HMAC key) or RS256 (an RSA key, public keys at /.well-known/jwks.json)",
    default: "HS256",
    apply: (c, v, n) => c.tokenAlg = parseChoice(v, n, TOKEN_ALGS),
  },
  {
    flag: "query-token",
    env: "STORAGE_QUERY_TOKEN",
    placeholder: "on|off",
    description: "Accept the deprecated ?token= form (off: 401, naming the header form)",
    default: "on",
    apply: (c, v, n) => c.queryToken = parseChoice(v, n, ["on", "off"]) === "on",
  },
  {
    flag: "signup-limit",
    env: "STORAGE_SIGNUP_LIMIT",
    placeholder: "COUNT",
    description: "Signups per client IP per hour",
    default: "20",
    apply: (c, v, n) => c.signupsPerHour = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  // Uploads and resources: what is accepted, the hashing, memory and time it may take.
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
    flag: "body-min-rate",
    env: "STORAGE_BODY_MIN_RATE",
    placeholder: "SIZE",
    description: "Least average rate of a request body, per second, after --body-rate-grace; " +
      "slower bodies are cut (408) and release what they reserved (0 = off)",
    default: "16KiB",
    apply: (c, v, n) => c.bodyMinBytesPerSecond = v.trim() === "0" ? 0 : parseSize(v, n),
  },
  {
    flag: "body-rate-grace",
    env: "STORAGE_BODY_RATE_GRACE",
    placeholder: "SECONDS",
    description: "How long a body may wait on its client before --body-min-rate applies",
    default: "30",
    apply: (c, v, n) => c.bodyRateGraceMs = parseInteger(v, n, { min: 1, max: 86400 }) * 1000,
  },
  {
    flag: "send-min-rate",
    env: "STORAGE_SEND_MIN_RATE",
    placeholder: "SIZE",
    description: "Least average rate a client must take an answer at, per second, after " +
      "--body-rate-grace; slower ones, and answers untaken for --body-idle-timeout, are cut " +
      "(0 = answers are not watched)",
    default: "16KiB",
    apply: (c, v, n) => c.sendMinBytesPerSecond = v.trim() === "0" ? 0 : parseSize(v, n),
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
  // Signup: who may mint a token over HTTP, and the mail that carries the codes.
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
  // Limits: how far ahead a deal may run, and what uploads in flight may hold.
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
  // What one request may cost in blocks: a CAR's index, a gateway answer's walk.
  {
    flag: "sponsored-car-max-blocks",
    env: "STORAGE_SPONSORED_CAR_MAX_BLOCKS",
    placeholder: "COUNT",
    description: "Most blocks one sponsored CAR upload may hold (413 too_many_blocks past it)",
    default: "100000",
    apply: (c, v, n) => c.sponsored.carMaxBlocks = parseInteger(v, n, { min: 1, max: 10_000_000 }),
  },
  {
    flag: "car-max-blocks",
    env: "STORAGE_CAR_MAX_BLOCKS",
    placeholder: "COUNT",
    description: "Most blocks one CAR upload with a token (e-mail or wallet) may hold (413 " +
      "too_many_blocks past it)",
    default: "1000000",
    apply: (c, v, n) => c.token.carMaxBlocks = parseInteger(v, n, { min: 1, max: 10_000_000 }),
  },
  {
    flag: "sponsored-tus-max-open",
    env: "STORAGE_SPONSORED_TUS_MAX_OPEN",
    placeholder: "COUNT",
    description: "Unfinished resumable uploads one client address may hold (429 " +
      "too_many_uploads past it)",
    default: "16",
    apply: (c, v, n) => c.sponsored.tusMaxOpen = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  {
    flag: "tus-max-open",
    env: "STORAGE_TUS_MAX_OPEN",
    placeholder: "COUNT",
    description: "Unfinished resumable uploads one token (or wallet) user may hold (429 " +
      "too_many_uploads past it)",
    default: "64",
    apply: (c, v, n) => c.token.tusMaxOpen = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  {
    flag: "ipfs-max-walk-blocks",
    env: "STORAGE_IPFS_MAX_WALK_BLOCKS",
    placeholder: "COUNT",
    description: "Most blocks one CAR answer of the gateway walks (413 too_many_blocks past it)",
    default: "100000",
    apply: (c, v, n) => c.ipfsMaxWalkBlocks = parseInteger(v, n, { min: 1, max: 10_000_000 }),
  },
  // The wallet tier: daily caps from an ERC-20 balance (off without an RPC URL).
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
  // TLS, when the server terminates it itself.
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
    flag: "allow-unbounded-tls-handshakes",
    env: "STORAGE_ALLOW_UNBOUNDED_TLS_HANDSHAKES",
    placeholder: "BOOL",
    description: "Serve TLS on a public address although a handshake that never completes " +
      "cannot be timed out (each holds a connection until its client leaves)",
    default: "false",
    apply: (c, v, n) => c.allowUnboundedTlsHandshakes = parseBoolean(v, n),
  },
  // Connections: what one socket may hold of the server, plain and TLS alike.
  {
    flag: "max-connections",
    env: "STORAGE_MAX_CONNECTIONS",
    placeholder: "COUNT",
    description: "Open connections at most; past it a new one replaces the oldest idle one, " +
      "or is closed (keep it below the open-file limit)",
    default: "4096",
    apply: (c, v, n) => c.maxConnections = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  {
    flag: "max-connections-per-client",
    env: "STORAGE_MAX_CONNECTIONS_PER_CLIENT",
    placeholder: "COUNT",
    description: "Open connections one client address (IPv6: /64) may hold; trusted proxies " +
      "are exempt",
    default: "256",
    apply: (c, v, n) => c.maxConnectionsPerClient = parseInteger(v, n, { min: 1, max: 1_000_000 }),
  },
  {
    flag: "header-timeout",
    env: "STORAGE_HEADER_TIMEOUT",
    placeholder: "SECONDS",
    description: "Close a connection whose first request head (TLS handshake included) is not " +
      "complete this long after it was accepted",
    default: "10",
    apply: (c, v, n) => c.headerTimeoutMs = parseInteger(v, n, { min: 1, max: 3600 }) * 1000,
  },
  {
    flag: "keep-alive-timeout",
    env: "STORAGE_KEEP_ALIVE_TIMEOUT",
    placeholder: "SECONDS",
    description: "Close a kept-alive connection whose next request head is not complete this " +
      "long after the last answer",
    default: "75",
    apply: (c, v, n) => c.keepAliveTimeoutMs = parseInteger(v, n, { min: 1, max: 86400 }) * 1000,
  },
  {
    flag: "connection-bounds",
    env: "STORAGE_CONNECTION_BOUNDS",
    placeholder: "BOOL",
    description: "false: Deno.serve accepts connections, without the four bounds above (only " +
      "behind a proxy that has them)",
    default: "true",
    apply: (c, v, n) => c.connectionBounds = parseBoolean(v, n),
  },
  // Logs and metrics.
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
  // Background scrub: re-hashing every stored piece.
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
  // Lifecycle: pieces no deal wants any more are removed after a grace period.
  {
    flag: "retention-grace-days",
    env: "STORAGE_RETENTION_GRACE_DAYS",
    placeholder: "DAYS",
    description: "Days a piece is kept after its last deal expired or was deleted",
    default: "7",
    apply: (c, v, n) => c.retentionGraceDays = parseInteger(v, n, { min: 0, max: 36500 }),
  },
  {
    flag: "gc-interval",
    env: "STORAGE_GC_INTERVAL",
    placeholder: "HOURS",
    description: "Hours between sweeps removing pieces no deal wants (0 = off; see main.ts gc)",
    default: "6",
    apply: (c, v, n) => c.gcIntervalHours = parseInteger(v, n, { min: 0, max: 8760 }),
  },
  {
    flag: "gc-rate",
    env: "STORAGE_GC_RATE",
    placeholder: "COUNT",
    description: "Pieces per second a sweep removes at most",
    default: "100",
    apply: (c, v, n) => c.gcRemovalsPerSecond = parseInteger(v, n, { min: 1, max: 100_000 }),
  },
  // Hand-off: every piece an active deal keeps goes on to a Filecoin PDP provider (docs/handoff.md).
  {
    flag: "handoff",
    env: "STORAGE_HANDOFF",
    placeholder: "off|pdp",
    description:
      "Hand stored pieces on to a PDP storage provider (pdp) or keep them here only (off)",
    default: "off",
    apply: (c, v, n) => c.handoff.mode = parseChoice(v, n, HANDOFF_MODES),
  },
  {
    flag: "pdp-url",
    env: "STORAGE_PDP_URL",
    placeholder: "URL",
    description: "The PDP provider's service URL (its Curio PDP API)",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.handoff.pdpUrl = v === "" ? null : parseHttpUrl(v, n),
  },
  {
    flag: "pdp-record-keeper",
    env: "STORAGE_PDP_RECORD_KEEPER",
    placeholder: "ADDRESS",
    description: "The Warm Storage contract (record keeper, EIP-712 verifying contract)",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.handoff.recordKeeper = v === "" ? null : parseAddress(v, n),
  },
  {
    flag: "chain-id",
    env: "STORAGE_CHAIN_ID",
    placeholder: "ID",
    description: "Filecoin chain of the hand-off: 314 mainnet, 314159 calibration, 31415926 devnet",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) =>
      c.handoff.chainId = v === "" ? null : Number(parseChoice(v, n, PDP_CHAIN_IDS)),
  },
  {
    flag: "pdp-key-file",
    env: "STORAGE_PDP_KEY_FILE",
    placeholder: "FILE",
    description: "Hex private key that signs for the payer (mode 0600; never logged)",
    default: "",
    defaultHelp: "none",
    apply: (c, v) => c.handoff.keyFile = v === "" ? null : v,
  },
  {
    flag: "pdp-payer",
    env: "STORAGE_PDP_PAYER",
    placeholder: "ADDRESS",
    description: "The payer, when --pdp-key-file holds a session key it authorised",
    default: "",
    defaultHelp: "the key's own address",
    apply: (c, v, n) => c.handoff.payer = v === "" ? null : parseAddress(v, n),
  },
  {
    flag: "pdp-payee",
    env: "STORAGE_PDP_PAYEE",
    placeholder: "ADDRESS",
    description: "The provider's payee address (its registry entry on chain names it)",
    default: "",
    defaultHelp: "none",
    apply: (c, v, n) => c.handoff.payee = v === "" ? null : parseAddress(v, n),
  },
  {
    flag: "pdp-allow-http-source",
    env: "STORAGE_PDP_ALLOW_HTTP_SOURCE",
    placeholder: "BOOL",
    description: "Let the provider pull from an http:// --base-url (local testing only)",
    default: "false",
    apply: (c, v, n) => c.handoff.allowHttpSource = parseBoolean(v, n),
  },
  {
    flag: "handoff-wait",
    env: "STORAGE_HANDOFF_WAIT",
    placeholder: "SECONDS",
    description: "How long an upload waits for the provider to hold its piece (0 = never)",
    default: "0",
    apply: (c, v, n) => c.handoff.waitSeconds = parseInteger(v, n, { min: 0, max: 3600 }),
  },
  // Scale-out: metadata in a shared PostgreSQL, pieces in an S3-compatible bucket.
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
    flag: "db-timeout",
    env: "STORAGE_DB_TIMEOUT",
    placeholder: "SECONDS",
    description: "Longest one PostgreSQL call may take before the request answers 503",
    default: "5",
    apply: (c, v, n) => c.dbTimeoutMs = parseInteger(v, n, { min: 1, max: 3600 }) * 1000,
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
    flag: "s3-timeout",
    env: "STORAGE_S3_TIMEOUT",
    placeholder: "SECONDS",
    description: "Longest one S3 request may wait for its answer (a silent bucket fails sooner)",
    default: "30",
    apply: (c, v, n) => c.s3TimeoutMs = parseInteger(v, n, { min: 1, max: 3600 }) * 1000,
  },
  // The request log (last, where --help has always listed it).
  {
    flag: "log-requests",
    env: "STORAGE_LOG_REQUESTS",
    placeholder: "BOOL",
    description: "One JSON log line per request on stderr",
    default: "true",
    apply: (c, v, n) => c.logRequests = parseBoolean(v, n),
  },
];

/** Environment variables that hold the bucket's credentials (never flags). */
export const S3_CREDENTIAL_ENV = {
  accessKeyId: "STORAGE_S3_ACCESS_KEY_ID",
  secretAccessKey: "STORAGE_S3_SECRET_ACCESS_KEY",
} as const;
