/**
 * `main.ts token mint | list | revoke` — the operator's tokens, minted and
 * revoked on the server machine itself (the way in when signup is closed).
 *
 * It works on the data directory directly and takes no serving lock: every
 * write is one SQLite transaction (WAL lets it run beside a serving process)
 * and the key file is only created atomically if missing, so a running server
 * sees a minted or revoked token on its next request. With --database it
 * works on the shared PostgreSQL database the same way, and every instance
 * sees the change on its next request.
 *
 *   token mint --email a@b.org --label ci [--scopes put,list] [--quota-mb 512]
 *   token list [--email a@b.org]
 *   token revoke <jti>
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";
import { HmacKey, keyFilePath } from "../../auth/hmac_key.ts";
import { TokenService, userIdOf } from "../../auth/tokens.ts";
import { systemClock, toRfc3339 } from "../../clock.ts";
import type { Clock } from "../../clock.ts";
import { ConfigError, loadConfig, OPTIONS } from "../../config/mod.ts";
import type { Config } from "../../config/mod.ts";
import { dataDirPaths, makePrivateDatabaseFiles, makePrivateDirectory } from "../../data_dir.ts";
import { openDatabase } from "../../db/sqlite/database.ts";
import { pathExists } from "../../fs/files.ts";
import { SqliteTokenRecords } from "../../db/sqlite/token_records.ts";
import type { TokenRecords } from "../../db/records.ts";
import { PostgresDatabase } from "../../db/postgres/postgres_database.ts";
import { ApiError } from "../../errors.ts";
import { signupResultOf } from "../../auth/signup_result.ts";
import { parseSignupFields } from "../../auth/signup_fields.ts";
import { MIB } from "../../limits/tiers.ts";
import { silentLogger } from "../../log.ts";

export const TOKEN_USAGE =
  `Usage: main.ts token mint --email EMAIL --label LABEL [--scopes put,get,list,pin] [--quota-mb N]
       main.ts token list [--email EMAIL]
       main.ts token revoke JTI
Each also takes the server's flags that say where its data is (--data-dir, --hmac-key-file, …).`;

const TOKEN_FLAGS: ParseArgsOptionsConfig = {
  email: { type: "string" },
  label: { type: "string" },
  scopes: { type: "string" },
  "quota-mb": { type: "string" },
};

export interface TokenCommandOptions {
  args: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  /** Where results go (one JSON document); stdout in production. */
  print(text: string): void;
  clock?: Clock;
}

/** Runs a token subcommand; throws ConfigError for a bad command line or field. */
export async function runTokenCommand(options: TokenCommandOptions): Promise<number> {
  const { action, target, flags, config } = parseTokenArgs(options.args, options.env);
  const opened = await openTokenStore(config, action === "mint");
  try {
    const { records } = opened;
    const clock = options.clock ?? systemClock;
    if (action === "mint") {
      const maxQuotaMb = Math.floor(config.token.dailyCapBytes / MIB);
      const fields = parseSignupFields({
        email: flags.email,
        label: flags.label,
        scopes: flags.scopes?.split(",").map((s) => s.trim()),
        quotaMb: flags["quota-mb"] === undefined ? undefined : Number(flags["quota-mb"]),
      }, maxQuotaMb);
      const tokens = new TokenService({
        hmacKey: await opened.hmacKey(),
        records,
        clock,
        lifetimeDays: config.tokenLifetimeDays,
        maxQuotaMb,
      });
      options.print(JSON.stringify(signupResultOf(await tokens.mint(fields)), null, 2));
    } else if (action === "list") {
      const sub = flags.email === undefined ? undefined : userIdOf(flags.email);
      options.print(JSON.stringify({ tokens: await records.list({ sub }) }, null, 2));
    } else {
      const record = await records.get(target!);
      if (record === null) throw new ConfigError(`No token has jti ${target}`);
      if (record.revokedAt === null) await records.revoke(record.jti, toRfc3339(clock.now()));
      const revokedAt = (await records.get(record.jti))!.revokedAt;
      options.print(JSON.stringify({ jti: record.jti, revoked: true, revokedAt }, null, 2));
    }
    return 0;
  } catch (error) {
    // Field checks are shared with the signup endpoint: say them as command-line errors.
    if (error instanceof ApiError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await opened.close();
  }
}

interface OpenedTokenStore {
  records: TokenRecords;
  /** The signing key, opened only for mint (list and revoke need none). */
  hmacKey(): Promise<HmacKey>;
  close(): Promise<void>;
}

/** The server's token records: the shared PostgreSQL database, or SQLite in the data directory. */
async function openTokenStore(config: Config, minting: boolean): Promise<OpenedTokenStore> {
  if (config.databaseUrl !== null) {
    const postgres = await PostgresDatabase.open({ url: config.databaseUrl, logger: silentLogger });
    return {
      records: postgres.tokens,
      hmacKey: () =>
        config.hmacKeyFile === null
          ? HmacKey.fromSource(postgres.hmacKeys)
          : HmacKey.open({ path: config.hmacKeyFile, createIfMissing: false }),
      close: () => postgres.close(),
    };
  }
  if (config.dataDir === null) {
    throw new ConfigError("token commands need --data-dir or --database");
  }
  const dataDir = config.dataDir;
  const paths = dataDirPaths(dataDir);
  if (minting) {
    // Minting may come first on a new machine: the directory is made as the server makes it.
    await makePrivateDirectory(dataDir, silentLogger);
    await makePrivateDatabaseFiles(paths.database);
  } else if (!await pathExists(paths.database)) {
    // A mistyped --data-dir must not list an empty, newly created database.
    throw new ConfigError(`No database at ${paths.database}: check --data-dir`);
  }
  const db = openDatabase({ path: paths.database, busyTimeoutMs: config.dbBusyTimeoutMs });
  return {
    records: new SqliteTokenRecords(db),
    hmacKey: () =>
      HmacKey.open({
        path: keyFilePath({ dataDir, keyFile: config.hmacKeyFile }),
        createIfMissing: config.hmacKeyFile === null,
      }),
    // deno-lint-ignore require-await -- closing node:sqlite is synchronous.
    close: async () => db.close(),
  };
}

interface TokenArgs {
  action: "mint" | "list" | "revoke";
  /** The jti, for revoke. */
  target: string | null;
  flags: { email?: string; label?: string; scopes?: string; "quota-mb"?: string };
  config: Config;
}

function parseTokenArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): TokenArgs {
  const serverFlags = Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }]));
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...serverFlags, ...TOKEN_FLAGS },
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message.split("\n")[0]}\n${TOKEN_USAGE}`);
  }
  const [action, target, ...extra] = parsed.positionals;
  const wantsTarget = action === "revoke";
  if (
    (action !== "mint" && action !== "list" && action !== "revoke") ||
    (wantsTarget ? target === undefined : target !== undefined) || extra.length > 0
  ) {
    throw new ConfigError(TOKEN_USAGE);
  }
  const configArgs = parsed.tokens.flatMap((token) =>
    token.kind === "option" && !(token.name in TOKEN_FLAGS)
      ? [`--${token.name}=${token.value}`]
      : []
  );
  const loaded = loadConfig(configArgs, env);
  if (loaded.kind !== "config") throw new ConfigError(TOKEN_USAGE);
  return {
    action,
    target: target ?? null,
    flags: parsed.values as TokenArgs["flags"],
    config: loaded.config,
  };
}
