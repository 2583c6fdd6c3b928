/**
 * The command line of an operator command (`main.ts token`, `backup`, `scrub`,
 * `migrate`):
 * its own flags and positionals, plus every server flag, because the command
 * must find the data the way the server does (--data-dir, --database,
 * --store, --hmac-key-file, the environment) and may take a server setting
 * (--scrub-rate). A bad command line is a one-line ConfigError ending in the
 * usage, so main.ts prints it as `error: …` and exits 2. The command is
 * run by run_command.ts, which reads its command line with this, and opens
 * what it works on the server's one way (backends/open.ts), so a command
 * works on every deployment the server does.
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";
import { ConfigError, loadConfig, OPTIONS } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";

/** What main.ts hands an operator command. */
export interface OperatorCommandOptions {
  args: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  /** Where the result goes (one JSON document); stdout in production. */
  print(text: string): void;
}

export interface CommandArgsOptions extends Pick<OperatorCommandOptions, "args" | "env"> {
  /** One line, e.g. "main.ts scrub [--scrub-rate SIZE] [server flags]". */
  usage: string;
  /** The command's own flags, beside the server's. */
  flags?: ParseArgsOptionsConfig;
  /** How many positional arguments the command takes: exactly, or from min to max. */
  positionals: number | { min: number; max: number };
}

export type CommandArgs =
  | { kind: "help" }
  | {
    kind: "command";
    positionals: string[];
    flags: Record<string, string | boolean | undefined>;
    config: Config;
  };

export function parseCommandArgs(options: CommandArgsOptions): CommandArgs {
  const ownFlags: ParseArgsOptionsConfig = {
    ...options.flags,
    help: { type: "boolean", short: "h" },
  };
  const serverFlags = Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }]));
  let parsed;
  try {
    parsed = parseArgs({
      args: [...options.args],
      options: { ...serverFlags, ...ownFlags },
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message.split("\n")[0]}; usage: ${options.usage}`);
  }
  if (parsed.values.help === true) return { kind: "help" };
  const { min, max } = typeof options.positionals === "number"
    ? { min: options.positionals, max: options.positionals }
    : options.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new ConfigError(`usage: ${options.usage}`);
  }
  const configArgs = parsed.tokens.flatMap((token) =>
    token.kind === "option" && !(token.name in ownFlags) ? [`--${token.name}=${token.value}`] : []
  );
  const loaded = loadConfig(configArgs, options.env);
  if (loaded.kind !== "config") return { kind: "help" };
  return {
    kind: "command",
    positionals: parsed.positionals,
    flags: parsed.values,
    config: loaded.config,
  };
}
