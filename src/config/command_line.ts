/**
 * The command line, read against the option table: node:util parseArgs takes
 * every setting as `--flag VALUE` or `--flag=VALUE` (and `--help`), and its
 * errors are reworded to name the flag. `--help` is drawn from the same table,
 * so every flag, its variable and its default are listed as they are parsed.
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";
import { OPTIONS } from "./options.ts";
import type { OptionSpec } from "./options.ts";
import { ConfigError } from "./parse.ts";

/** parseArgs options from the table: every setting takes a value (BOOL ones too: `true`/`false`). */
const PARSE_OPTIONS: ParseArgsOptionsConfig = {
  ...Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }])),
  help: { type: "boolean", short: "h" },
};
const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

/** The flags in the order given, or "help"; a malformed command line is a ConfigError. */
export function parseFlags(
  args: readonly string[],
): { option: OptionSpec; value: string }[] | "help" {
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
    "       main.ts token mint|list|revoke …   the operator's tokens (main.ts token for more)",
    "       main.ts backup DEST [flags]  a consistent copy of the data, beside running servers",
    "       main.ts scrub [flags]        re-hash every stored piece; mark the corrupt ones",
    "       main.ts migrate [flags]      move a data directory into PostgreSQL and/or a bucket",
    "       main.ts gc [flags]           remove pieces no deal wants (--dry-run lists them)",
    "       main.ts handoff status|retry …   pieces at the storage provider (--handoff pdp)",
    "",
    "Flags (each also read from the environment variable shown; a flag wins):",
    ...rows,
    "  --help                              Show this text",
    "",
    "Sizes take a unit: B, KiB, MiB, GiB, TiB (e.g. 100MiB); a bare number is bytes.",
  ].join("\n");
}
