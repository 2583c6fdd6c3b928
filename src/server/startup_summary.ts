/**
 * The lines a server logs once it listens: which build runs, where its data
 * is, where it listens and under which public URL, whether it serves TLS,
 * how connections are bounded, what each tier allows, who may sign up, where
 * the token key comes from, whether /metrics is on, and how garbage
 * collection runs (when it last did), and where pieces go after they are
 * stored (kept here only, or handed to a storage provider). An operator checks a deployment by reading them, so
 * they show every setting that changes what users get, and nothing secret:
 * no tokens, no SMTP password, no hand-off key (only the address it signs
 * as), and of the wallet tier's RPC URL (which often
 * carries an API key) only its host. Then a warning for each setting that
 * exposes something on a public address (open signup, public /metrics).
 */
import { isLoopbackHostname } from "../net/ip.ts";
import { whereOf } from "../db/postgres/connection.ts";
import type { Config, TierConfig } from "../config/mod.ts";
import type { Logger } from "../kernel/log.ts";
import type { CertificateSummary } from "../net/tls_files.ts";
import type { SweepRecord } from "../domain/lifecycle_records.ts";
import { VERSION } from "../kernel/version.ts";

export interface StartupSummary {
  config: Config;
  /** The listen address as a URL. */
  url: string;
  baseUrl: string;
  /** The certificate served; null for plain HTTP. */
  certificate: CertificateSummary | null;
  /**
   * Where the token signing key is read from (a file, or "the database");
   * null when storage is offline (in-memory key).
   */
  hmacKeyWhere: string | null;
  /** Whether the own accept loop bounds connections. */
  connectionsBounded: boolean;
  /** The last garbage-collection sweep that finished (any instance, or main.ts gc); null: none. */
  lastSweep: SweepRecord | null;
  /** Who pays the storage provider, with --handoff pdp; null: pieces stay here only. */
  handoffPayer: string | null;
}

export function logStartupSummary(logger: Logger, summary: StartupSummary): void {
  const { config, certificate } = summary;
  logger.info("starting", {
    version: VERSION,
    deno: Deno.version.deno,
    dataDir: config.dataDir ?? "none",
  });
  logger.info("backends", {
    database: config.databaseUrl === null ? "sqlite" : "postgres",
    // Host and database name only: the URL's password stays out of logs.
    databaseAt: config.databaseUrl === null ? undefined : whereOf(config.databaseUrl),
    store: config.store,
    s3Endpoint: config.s3?.endpoint,
    s3Bucket: config.s3?.bucket,
    source: config.s3?.sourceLabel ?? "stage",
  });
  logger.info("listening", {
    url: summary.url,
    baseUrl: summary.baseUrl,
    tls: certificate === null ? "off" : "on",
    cert: config.tls?.certFile,
    certSubject: certificate?.subject,
    certExpires: certificate?.notAfter,
  });
  logger.info("connections", {
    bounded: summary.connectionsBounded,
    maxConnections: summary.connectionsBounded ? config.maxConnections : undefined,
    maxPerClient: summary.connectionsBounded ? config.maxConnectionsPerClient : undefined,
    headerTimeoutS: summary.connectionsBounded ? config.headerTimeoutMs / 1000 : undefined,
    keepAliveTimeoutS: summary.connectionsBounded ? config.keepAliveTimeoutMs / 1000 : undefined,
  });
  logger.info("tier", { name: "sponsored", ...tierFields(config.sponsored), per: "client IP" });
  logger.info("tier", { name: "token", ...tierFields(config.token), per: "user" });
  const { wallet } = config;
  if (wallet.rpcUrl !== null) {
    logger.info("tier", {
      name: "wallet",
      maxFileSize: wallet.maxFileBytes === null ? "none" : formatSize(wallet.maxFileBytes),
      dailyCapPerUsdc: formatSize(wallet.bytesPerUsdc),
      termDays: wallet.termDays,
      chainId: wallet.chainId,
      rpcHost: new URL(wallet.rpcUrl).host,
    });
  }
  logger.info("signup", {
    mode: config.signup,
    hmacKey: summary.hmacKeyWhere ?? "in memory (storage offline)",
    hmacKeySource: summary.hmacKeyWhere === null
      ? "none"
      : config.hmacKeyFile !== null
      ? "--hmac-key-file"
      : config.databaseUrl !== null
      ? "database"
      : "data dir",
  });
  logger.info("metrics", {
    enabled: config.metricsEnabled,
    access: config.metricsToken === null ? "public" : "bearer token",
  });
  const { lastSweep } = summary;
  logger.info("gc", {
    intervalHours: config.gcIntervalHours,
    graceDays: config.retentionGraceDays,
    ratePerSecond: config.gcRemovalsPerSecond,
    lastSweep: lastSweep?.finishedAt ?? "never",
    lastRemovedPieces: lastSweep?.removedPieces,
    lastRemovedBytes: lastSweep?.removedBytes,
  });
  const { handoff } = config;
  logger.info("handoff", {
    mode: handoff.mode,
    where: handoff.mode === "off"
      ? "pieces stay here only"
      : `every piece an active deal keeps goes to ${handoff.pdpUrl}`,
    chainId: handoff.chainId ?? undefined,
    recordKeeper: handoff.recordKeeper ?? undefined,
    payer: summary.handoffPayer ?? undefined,
    payee: handoff.payee ?? undefined,
    waitSeconds: handoff.mode === "off" ? undefined : handoff.waitSeconds,
  });
}

/** Warns about what anyone who can reach a public listen address can do. */
export function warnAboutPublicExposure(
  logger: Logger,
  { config, hostname, connectionsBounded }: {
    config: Config;
    hostname: string;
    /** Whether the own accept loop bounds connections. */
    connectionsBounded: boolean;
  },
): void {
  warnAboutOpenFileLimit(logger, config, connectionsBounded);
  if (isLoopbackHostname(hostname)) {
    if (config.connectionBounds && !connectionsBounded) {
      logger.warn("this Deno cannot bound connections: Deno.serve accepts them, unbounded", {
        deno: Deno.version.deno,
      });
    }
    return;
  }
  if (!connectionsBounded) {
    logger.warn(
      "connections are not bounded on a public address (--connection-bounds false): idle and " +
        "slow clients can hold every connection and descriptor; keep this behind nginx",
      { hostname },
    );
  }
  if (config.signup === "open") {
    logger.warn(
      "signup is open on a public address: anyone can mint a token for any e-mail and read " +
        "and revoke that user's files and tokens; use --signup verify or --signup closed",
      { hostname },
    );
  }
  if (config.metricsEnabled && config.metricsToken === null) {
    logger.warn(
      "/metrics is public on a public address: anyone can read traffic, disk and memory " +
        "figures; set --metrics-token, keep /metrics behind the proxy, or --metrics false",
      { hostname },
    );
  }
}

function tierFields(tier: TierConfig) {
  return {
    maxFileSize: formatSize(tier.maxFileBytes),
    dailyCap: formatSize(tier.dailyCapBytes),
    termDays: tier.termDays,
  };
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** A size as the flags take it: the largest binary unit that divides it (100MiB, 1536KiB). */
export function formatSize(bytes: number): string {
  let unit = 0;
  while (unit < UNITS.length - 1 && bytes > 0 && bytes % 1024 === 0) {
    bytes /= 1024;
    unit++;
  }
  return `${bytes}${UNITS[unit]}`;
}

/** Descriptors the process needs besides connections: files, databases, workers, sockets. */
const DESCRIPTOR_HEADROOM = 256;

/**
 * Warns when --max-connections does not fit under the open-file limit. The
 * limit is read from /proc/self/limits only where the process may read it
 * (not under the start task's permissions: then nothing is said); the accept
 * loop survives running out either way, but files and sockets then fail too.
 */
function warnAboutOpenFileLimit(logger: Logger, config: Config, bounded: boolean): void {
  const path = "/proc/self/limits";
  if (!bounded || Deno.permissions.querySync({ name: "read", path }).state !== "granted") return;
  let soft: number;
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(Deno.readTextFileSync(path));
    if (line === null || line[1] === "unlimited") return;
    soft = Number(line[1]);
  } catch {
    return;
  }
  if (config.maxConnections + DESCRIPTOR_HEADROOM <= soft) return;
  logger.warn(
    "--max-connections does not fit under the open-file limit: raise the limit (LimitNOFILE=, " +
      "ulimit -n) or lower --max-connections",
    { maxConnections: config.maxConnections, openFileLimit: soft, headroom: DESCRIPTOR_HEADROOM },
  );
}
