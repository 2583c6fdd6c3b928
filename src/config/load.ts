/**
 * Loading: the command line and the `STORAGE_*` environment, through the
 * option table, into one frozen `Config`. `loadConfig` is pure (arguments and
 * environment in, frozen object out) so tests build configs without touching
 * the process; main.ts hands it the variables named in ENV_NAMES. Checks that
 * span several settings (TLS as a pair, the wallet tier's three settings,
 * --store s3 and its bucket) live here, after every value has parsed.
 */
import { isLoopbackHostname } from "../net/ip.ts";
import { helpText, parseFlags } from "./command_line.ts";
import { OPTIONS, S3_CREDENTIAL_ENV } from "./options.ts";
import type { MutableConfig } from "./options.ts";
import { ConfigError, MIB } from "./parse.ts";
import type { Config, HandoffConfig, S3Config, WalletConfig } from "./types.ts";

/** Environment variable names the service reads (for `--allow-env` and docs). */
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
  const config = { sponsored: {}, token: {}, wallet: {}, handoff: {} } as MutableConfig;
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
  checkHandoff(config.handoff, config.baseUrl);
  if (config.tokenAlg === "RS256" && config.dataDir === null && config.databaseUrl === null) {
    // The RSA keys live in the data directory, or in the database instances share.
    throw new ConfigError("--token-alg RS256 needs --data-dir or --database (to keep its keys)");
  }
  if (config.xAccelRedirect !== null && config.store !== "disk") {
    // A bucket's pieces are no files nginx could open; a bucket has its own URLs for that.
    throw new ConfigError("--x-accel-redirect is for --store disk: bucket pieces are not files");
  }
  if (config.xAccelRedirect !== null && config.trustedProxies.length === 0) {
    // Only a request through a trusted proxy is offloaded: without one, nothing ever would be.
    throw new ConfigError(
      "--x-accel-redirect needs --trusted-proxies: only requests through nginx are offloaded",
    );
  }
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
  if (tls !== null && !isLoopbackHostname(config.hostname) && !config.allowUnboundedTlsHandshakes) {
    throw new ConfigError(
      `--tls-cert on ${config.hostname}, a public address: Deno cannot time out a TLS ` +
        "handshake that never completes, so each one holds a connection until its client " +
        'leaves; put nginx in front (docs/operations.md, "From a fresh VPS to HTTPS"), ' +
        "or accept that with --allow-unbounded-tls-handshakes true",
    );
  }
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

/**
 * --handoff pdp needs the provider, the contract, the chain, the key and the
 * payee; the provider pulls from --base-url, so that must be an https:// URL
 * it can reach (http:// only with --pdp-allow-http-source). The --pdp-*
 * settings without --handoff pdp are a mistake, said at once.
 */
function checkHandoff(handoff: HandoffConfig, baseUrl: string | null): void {
  const given = [
    ["--pdp-url", handoff.pdpUrl],
    ["--pdp-record-keeper", handoff.recordKeeper],
    ["--chain-id", handoff.chainId],
    ["--pdp-key-file", handoff.keyFile],
    ["--pdp-payee", handoff.payee],
  ] as const;
  if (handoff.mode === "off") {
    const stray: string[] = [...given, ["--pdp-payer", handoff.payer] as const]
      .filter(([, value]) => value !== null).map(([flag]) => flag);
    if (handoff.waitSeconds > 0) stray.push("--handoff-wait");
    if (stray.length > 0) {
      throw new ConfigError(
        `${stray.join(", ")} ${stray.length > 1 ? "are" : "is"} for --handoff pdp`,
      );
    }
    return;
  }
  const missing = given.filter(([, value]) => value === null).map(([flag]) => flag);
  if (missing.length > 0) throw new ConfigError(`--handoff pdp needs ${missing.join(", ")}`);
  if (baseUrl === null) {
    throw new ConfigError(
      "--handoff pdp needs --base-url: the provider pulls each piece from <base URL>/piece/<PieceCID>",
    );
  }
  if (!baseUrl.startsWith("https://") && !handoff.allowHttpSource) {
    throw new ConfigError(
      `--handoff pdp: the provider pulls from --base-url, which must be https:// (got ${baseUrl}); ` +
        "--pdp-allow-http-source true lifts that for local testing",
    );
  }
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
