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
import { RsaKeyRing } from "../auth/rsa_keys.ts";
import { hmacSigning } from "../auth/token_signing.ts";
import type { ParseArgsOptionsConfig } from "node:util";
import { TokenService, userIdOf } from "../auth/tokens.ts";
import { systemClock, toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { ConfigError } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import type { TokenSigning } from "../auth/token_signing.ts";
import type { TokenRecords } from "../domain/auth_records.ts";
import type { SignupResult } from "../kernel/wire.ts";
import { ApiError } from "../kernel/errors.ts";
import { signupResultOf } from "../auth/signup_result.ts";
import { parseSignupFields } from "../auth/signup_fields.ts";
import { MIB } from "../limits/tiers.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

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
export function runTokenCommand(options: TokenCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: {
      usage: "main.ts token mint|list|revoke … (main.ts token --help)",
      help: TOKEN_USAGE,
      flags: TOKEN_FLAGS,
      positionals: { min: 1, max: 2 },
    },
    // Field checks are shared with the signup endpoint: said as command-line errors.
    oneLineErrors: [ApiError],
    async run({ config, positionals: [action, target], flags }, open) {
      if (
        (action !== "mint" && action !== "list" && action !== "revoke") ||
        (action === "revoke") !== (target !== undefined)
      ) {
        throw new ConfigError(TOKEN_USAGE);
      }
      const minting = action === "mint";
      const backends = await open(config, {
        needs: { metadata: "records", store: false, hmacKey: minting },
        dataDir: minting ? "create" : "existing",
      });
      const context = {
        records: backends.metadata.tokens,
        clock: options.clock ?? systemClock,
        flags: flags as TokenFlags,
      };
      if (minting) {
        // Signed as the server signs: with the RSA keys (the data directory's or the
        // database's) under --token-alg RS256, else with the HMAC key.
        const signing = config.tokenAlg === "RS256" && backends.rsaKeyStore !== null
          ? (await RsaKeyRing.open(backends.rsaKeyStore, { createIfMissing: true }))
            .signing(context.clock)
          : hmacSigning(backends.hmacKey!);
        return { report: await mint(context, config, signing) };
      }
      if (action === "list") return { report: await list(context) };
      return { report: await revoke(context, target) };
    },
  });
}

interface TokenContext {
  records: TokenRecords;
  clock: Clock;
  flags: TokenFlags;
}

async function mint(
  context: TokenContext,
  config: Config,
  signing: TokenSigning,
): Promise<SignupResult> {
  const { flags } = context;
  const maxQuotaMb = Math.floor(config.token.dailyCapBytes / MIB);
  const fields = parseSignupFields({
    email: flags.email,
    label: flags.label,
    scopes: flags.scopes?.split(",").map((s) => s.trim()),
    quotaMb: flags["quota-mb"] === undefined ? undefined : Number(flags["quota-mb"]),
  }, maxQuotaMb);
  const tokens = new TokenService({
    signing,
    records: context.records,
    clock: context.clock,
    lifetimeDays: config.tokenLifetimeDays,
    maxQuotaMb,
  });
  return signupResultOf(await tokens.mint(fields));
}

async function list(context: TokenContext): Promise<object> {
  const email = context.flags.email;
  const sub = email === undefined ? undefined : userIdOf(email);
  return { tokens: await context.records.list({ sub }) };
}

async function revoke(context: TokenContext, jti: string): Promise<object> {
  const { records, clock } = context;
  const record = await records.get(jti);
  if (record === null) throw new ConfigError(`No token has jti ${jti}`);
  if (record.revokedAt === null) await records.revoke(record.jti, toRfc3339(clock.now()));
  const revokedAt = (await records.get(record.jti))!.revokedAt;
  return { jti: record.jti, revoked: true, revokedAt };
}
