/**
 * `main.ts token mint | list | revoke` — the operator's tokens, minted and
 * revoked on the server machine itself (the way in when signup is closed).
 *
 * It opens the server's metadata as the server would (backends/open.ts): the
 * data directory's SQLite, or with --database the shared PostgreSQL. It takes
 * no serving lock: every write is one transaction (SQLite's WAL lets it run
 * beside a serving process) and a key file is only created atomically if
 * missing, so a running server (every instance, with PostgreSQL) sees a
 * minted or revoked token on its next request. Only mint opens the key, and
 * only mint may create the data directory: list and revoke on a mistyped
 * --data-dir create nothing.
 *
 *   token mint --email a@b.org --label ci [--scopes put,list] [--quota-mb 512]
 *   token list [--email a@b.org]
 *   token revoke <jti>
 */
import type { ParseArgsOptionsConfig } from "node:util";
import { TokenService, userIdOf } from "../auth/tokens.ts";
import { systemClock, toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { ConfigError } from "../config/mod.ts";
import { ApiError } from "../kernel/errors.ts";
import { signupResultOf } from "../auth/signup_result.ts";
import { parseSignupFields } from "../auth/signup_fields.ts";
import { MIB } from "../limits/tiers.ts";
import { openCommandBackends, parseCommandArgs } from "./command_args.ts";
import type { OperatorCommandOptions } from "./command_args.ts";

export const TOKEN_USAGE =
  `Usage: main.ts token mint --email EMAIL --label LABEL [--scopes put,get,list,pin] [--quota-mb N]
       main.ts token list [--email EMAIL]
       main.ts token revoke JTI
Each also takes the server's flags that say where its data is (--data-dir, --database, …).`;

const TOKEN_FLAGS: ParseArgsOptionsConfig = {
  email: { type: "string" },
  label: { type: "string" },
  scopes: { type: "string" },
  "quota-mb": { type: "string" },
};

type TokenFlags = { email?: string; label?: string; scopes?: string; "quota-mb"?: string };

export interface TokenCommandOptions extends OperatorCommandOptions {
  clock?: Clock;
}

/** Runs a token subcommand; throws ConfigError for a bad command line or field. */
export async function runTokenCommand(options: TokenCommandOptions): Promise<number> {
  const parsed = parseCommandArgs({
    ...options,
    usage: "main.ts token mint|list|revoke … (main.ts token --help)",
    flags: TOKEN_FLAGS,
    positionals: { min: 1, max: 2 },
  });
  if (parsed.kind === "help") {
    options.print(TOKEN_USAGE);
    return 0;
  }
  const { config } = parsed;
  const [action, target] = parsed.positionals;
  const flags = parsed.flags as TokenFlags;
  if (
    (action !== "mint" && action !== "list" && action !== "revoke") ||
    (action === "revoke") !== (target !== undefined)
  ) {
    throw new ConfigError(TOKEN_USAGE);
  }
  const minting = action === "mint";
  const backends = await openCommandBackends(config, {
    needs: { metadata: "records", store: false, hmacKey: minting },
    dataDir: minting ? "create" : "existing",
  });
  const records = backends.metadata.tokens;
  const clock = options.clock ?? systemClock;
  try {
    if (minting) {
      const maxQuotaMb = Math.floor(config.token.dailyCapBytes / MIB);
      const fields = parseSignupFields({
        email: flags.email,
        label: flags.label,
        scopes: flags.scopes?.split(",").map((s) => s.trim()),
        quotaMb: flags["quota-mb"] === undefined ? undefined : Number(flags["quota-mb"]),
      }, maxQuotaMb);
      const tokens = new TokenService({
        hmacKey: backends.hmacKey!,
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
      const record = await records.get(target);
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
    await backends.close();
  }
}
