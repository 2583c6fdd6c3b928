/**
 * Command-line options of the scripts: node:util parseArgs (strict: unknown
 * flags, stray arguments and missing values are refused), with number options
 * checked, so `--runs x` is an error instead of NaN. `--help` prints the usage.
 *
 *   const opts = scriptArgs(USAGE, {
 *     runs: { type: "number", default: 3, integer: true, min: 1 },
 *     quick: { type: "boolean" },
 *   });
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";

export type ScriptOption =
  | { type: "number"; default?: number; integer?: boolean; min?: number; max?: number }
  | { type: "string"; default?: string }
  | { type: "boolean" };

/** An option's value: its default when not given, undefined if it has none (false for booleans). */
type ValueOf<O> = O extends { type: "boolean" } ? boolean
  : O extends { type: "number"; default: number } ? number
  : O extends { type: "number" } ? number | undefined
  : O extends { type: "string"; default: string } ? string
  : string | undefined;

export type ScriptValues<S> = { -readonly [K in keyof S]: ValueOf<S[K]> };

/** A bad command line; `scriptArgs` prints it and exits with status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Parses `args` (flags only: `--name value`, `--name=value`, `--flag`), or throws UsageError. */
export function parseScriptArgs<const S extends Record<string, ScriptOption>>(
  spec: S,
  args: readonly string[],
): ScriptValues<S> {
  const options: ParseArgsOptionsConfig = {};
  for (const [name, option] of Object.entries(spec)) {
    options[name] = { type: option.type === "boolean" ? "boolean" : "string" };
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")) {
      throw new UsageError((error as Error).message.split("\n")[0]);
    }
    throw error;
  }
  const out: Record<string, unknown> = {};
  for (const [name, option] of Object.entries(spec)) {
    const raw = values[name];
    if (option.type === "boolean") out[name] = raw === true;
    else if (typeof raw !== "string") out[name] = option.default;
    else if (option.type === "string") out[name] = raw;
    else out[name] = parseNumber(`--${name}`, raw, option);
  }
  return out as ScriptValues<S>;
}

/**
 * `parseScriptArgs` over Deno.args for a script's entry point: `--help` prints
 * `usage` and exits 0; a bad command line prints the error and exits 2.
 */
export function scriptArgs<const S extends Record<string, ScriptOption>>(
  usage: string,
  spec: S,
  args: readonly string[] = Deno.args,
): ScriptValues<S> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage);
    Deno.exit(0);
  }
  try {
    return parseScriptArgs(spec, args);
  } catch (error) {
    if (error instanceof UsageError) usageExit(usage, error.message);
    throw error;
  }
}

/** Prints `error: message` and the usage on stderr, and exits with status 2. */
export function usageExit(usage: string, message: string): never {
  console.error(`error: ${message}\n\n${usage}`);
  Deno.exit(2);
}

function parseNumber(
  flag: string,
  raw: string,
  option: { integer?: boolean; min?: number; max?: number },
): number {
  const n = raw.trim() === "" ? NaN : Number(raw);
  const ok = Number.isFinite(n) && (!option.integer || Number.isInteger(n)) &&
    (option.min === undefined || n >= option.min) && (option.max === undefined || n <= option.max);
  if (!ok) {
    const kind = option.integer ? "a whole number" : "a number";
    const range = option.min !== undefined && option.max !== undefined
      ? ` from ${option.min} to ${option.max}`
      : option.min !== undefined
      ? ` >= ${option.min}`
      : option.max !== undefined
      ? ` <= ${option.max}`
      : "";
    throw new UsageError(`${flag} must be ${kind}${range}, got "${raw}"`);
  }
  return n;
}
