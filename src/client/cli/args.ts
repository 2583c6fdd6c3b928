/**
 * The `storage` command line, parsed: one table of commands (name, usage,
 * options, how many arguments) drives node:util parseArgs (strict), the help
 * text and the checks, so a command cannot accept a flag its usage does not
 * show. Pure: arguments and environment in, a `CommandLine` out; a bad command
 * line is a `UsageError` (exit status 2), never a stack trace.
 *
 * Parsing is two passes: the first knows every flag of every command, only to
 * find the command word wherever the global flags put it (`storage --json
 * files`); the second allows just the global flags and that command's own.
 */
import { parseArgs } from "node:util";
import type { ParseArgsOptionsConfig } from "node:util";
import { parseSize } from "../../kernel/units.ts";

export const DEFAULT_SERVER = "http://127.0.0.1:8080";

/** A bad command line: wrong flags, arguments or values. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export interface CommandSpec {
  /** "upload", or "signup verify" / "tokens list" for the two-word commands. */
  name: string;
  /** What follows the name in the usage line. */
  synopsis: string;
  summary: string;
  options: ParseArgsOptionsConfig;
  args: { min: number; max: number };
  /**
   * For a command that reads a secret from the environment: it takes no
   * arguments, and these flags (hidden from its usage) are accepted by the
   * parser only to be refused with a pointer to the variable. Neither is ever
   * echoed back; a secret on a command line is in shell history and in `ps`.
   */
  secretFromEnv?: { variable: string; refusedFlags: string[] };
}

/** Flags every command takes. */
const GLOBAL_OPTIONS: ParseArgsOptionsConfig = {
  server: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  retries: { type: "string" },
  help: { type: "boolean", short: "h" },
};

const str = { type: "string" } as const;
const bool = { type: "boolean" } as const;

/** A row of the table: no `options` means none of its own, no `args` means no arguments. */
type CommandRow =
  & Omit<CommandSpec, "options" | "args">
  & Partial<Pick<CommandSpec, "options" | "args">>;

const ROWS: readonly CommandRow[] = [
  {
    name: "cid",
    synopsis: "FILE…",
    summary: "Print the PieceCIDv2 of each file (nothing is sent)",
    args: { min: 1, max: Infinity },
  },
  {
    name: "upload",
    synopsis: "FILE… [--piece-size SIZE] [--concurrency N] [--name NAME] [--type MIME] [--keep]",
    summary: "Upload files, split into pieces when larger than --piece-size; --keep keeps " +
      "unfinished pieces for the next run",
    // --sequential is the benchmark's baseline (hash every piece, then upload): not in --help.
    options: {
      "piece-size": str,
      concurrency: str,
      name: str,
      type: str,
      keep: bool,
      sequential: bool,
    },
    args: { min: 1, max: Infinity },
  },
  {
    name: "download",
    synopsis: "CID [-o PATH] [--force]",
    summary: "Download and verify a file (-o - writes to stdout)",
    options: { output: { type: "string", short: "o" }, force: bool },
    args: { min: 1, max: 1 },
  },
  {
    name: "signup",
    synopsis: "--email EMAIL --label LABEL [--scopes put,get,list,pin] [--quota-mb N]",
    summary: "Get a token (printed once; keep it in STORAGE_TOKEN)",
    options: { email: str, label: str, scopes: str, "quota-mb": str },
  },
  {
    name: "signup verify",
    synopsis: "--email EMAIL --code CODE",
    summary: "Exchange a mailed signup code for the token (servers in --signup verify mode)",
    options: { email: str, code: str },
  },
  {
    name: "wallet login",
    synopsis: "[--chain-id N]",
    summary: "Sign in with the Ethereum key in STORAGE_WALLET_KEY: a 24-hour wallet-tier token",
    options: { "chain-id": str, key: str, "private-key": str },
    secretFromEnv: { variable: "STORAGE_WALLET_KEY", refusedFlags: ["key", "private-key"] },
  },
  {
    name: "tokens list",
    synopsis: "",
    summary: "List your tokens (metadata only)",
  },
  {
    name: "tokens revoke",
    synopsis: "JTI",
    summary: "Revoke one of your tokens",
    args: { min: 1, max: 1 },
  },
  {
    name: "files",
    synopsis: "[--limit N] [--cursor CURSOR]",
    summary: "List your uploads, newest first",
    options: { limit: str, cursor: str },
  },
  {
    name: "usage",
    synopsis: "[--from YYYY-MM-DD] [--to YYYY-MM-DD]",
    summary: "Bytes uploaded per day, and what is left today",
    options: { from: str, to: str },
  },
  {
    name: "limits",
    synopsis: "[--size SIZE]",
    summary: "Your caps and what is left today; --size asks whether an upload would pass",
    options: { size: str },
  },
  {
    name: "extend",
    synopsis: "DEAL_ID",
    summary: "Extend a deal by one term",
    args: { min: 1, max: 1 },
  },
  {
    name: "delete",
    synopsis: "DEAL_ID --yes",
    summary: "End a deal now (its file goes once no deal keeps it); --yes confirms",
    options: { yes: bool },
    args: { min: 1, max: 1 },
  },
];

export const COMMANDS: readonly CommandSpec[] = ROWS.map((row) => ({
  options: {},
  args: { min: 0, max: 0 },
  ...row,
}));

/** The words that take a second word, and which. */
const TWO_WORD: Record<string, string[]> = {
  signup: ["verify"],
  tokens: ["list", "revoke"],
  wallet: ["login"],
};

export interface GlobalOptions {
  server: string;
  /** null: no token (sponsored uploads; account commands answer invalid_token). */
  token: string | null;
  json: boolean;
  /** Attempts per request, the first included. */
  attempts: number | undefined;
}

export type Flags = Record<string, string | boolean | undefined>;

export type CommandLine =
  | { kind: "help"; text: string }
  | { kind: "run"; command: CommandSpec; args: string[]; flags: Flags; global: GlobalOptions };

/** Parses argv; `env` supplies STORAGE_URL and STORAGE_TOKEN. Throws UsageError. */
export function parseCommandLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): CommandLine {
  const every: ParseArgsOptionsConfig = { ...GLOBAL_OPTIONS };
  for (const command of COMMANDS) Object.assign(every, command.options);
  const first = parse(argv, every);
  const words = first.positionals;
  if (words.length === 0 || words[0] === "help") {
    if (first.values.help || words[0] === "help") {
      const topic = words[1] === undefined ? undefined : findCommand(words.slice(1));
      return { kind: "help", text: topic ? commandHelp(topic) : mainHelp() };
    }
    throw new UsageError('no command given. Run "storage --help" for the commands');
  }
  const command = findCommand(words);
  if (first.values.help) return { kind: "help", text: commandHelp(command) };
  refuseSecretOnCommandLine(command, first);
  const { values, positionals } = parse(argv, { ...GLOBAL_OPTIONS, ...command.options });
  const args = positionals.slice(command.name.split(" ").length);
  const { min, max } = command.args;
  if (args.length < min || args.length > max) {
    const expected = command.synopsis.split(" [")[0] || "no arguments";
    throw new UsageError(
      `"${command.name}" takes ${expected}, got ${args.length === 0 ? "none" : args.join(" ")}. ` +
        `Run "storage ${command.name} --help"`,
    );
  }
  return { kind: "run", command, args, flags: values, global: globalOptions(values, env) };
}

function parse(argv: readonly string[], options: ParseArgsOptionsConfig) {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: true,
    });
    // No option is `multiple`, so no value is an array.
    return { values: values as Flags, positionals };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")) {
      // node's text ends with a hint about "--" that does not apply here.
      const message = (error as Error).message.split("\n")[0].replace(/\. To specify .*$/, "");
      throw new UsageError(`${message}. Run "storage --help" for the flags`);
    }
    throw error;
  }
}

/** Before anything could echo them: a command's secret never comes from the command line. */
function refuseSecretOnCommandLine(command: CommandSpec, parsed: ReturnType<typeof parse>) {
  if (!command.secretFromEnv) return;
  const { variable, refusedFlags } = command.secretFromEnv;
  const flag = refusedFlags.find((name) => parsed.values[name] !== undefined);
  const hasArgs = parsed.positionals.length > command.name.split(" ").length;
  if (flag === undefined && !hasArgs) return;
  throw new UsageError(
    `"${command.name}" reads the key from ${variable} only, not from ` +
      `${flag === undefined ? "arguments" : `--${flag}`}: command lines stay in shell history`,
  );
}

function findCommand(words: readonly string[]): CommandSpec {
  const [first, second] = words;
  const twoWord = TWO_WORD[first];
  let name = first;
  if (twoWord && second !== undefined && twoWord.includes(second)) name = `${first} ${second}`;
  else if (twoWord && !COMMANDS.some((c) => c.name === first)) {
    throw new UsageError(
      `"${first}" needs ${twoWord.map((w) => secondWordUsage(first, w)).join(" or ")}`,
    );
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    throw new UsageError(`unknown command "${first}". Run "storage --help" for the commands`);
  }
  return command;
}

/** `"revoke JTI"`: the second word and the arguments it takes, for a hint. */
function secondWordUsage(first: string, second: string): string {
  const synopsis = COMMANDS.find((c) => c.name === `${first} ${second}`)?.synopsis ?? "";
  const args = synopsis.replace(/\[.*$/, "").trim();
  return `"${args ? `${second} ${args}` : second}"`;
}

function globalOptions(values: Flags, env: Readonly<Record<string, string | undefined>>) {
  const server = stringFlag(values.server) ?? nonEmpty(env.STORAGE_URL) ?? DEFAULT_SERVER;
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new UsageError(`--server must be an http(s) URL, got "${server}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`--server must be an http(s) URL, got "${server}"`);
  }
  const token = stringFlag(values.token) ?? nonEmpty(env.STORAGE_TOKEN) ?? null;
  // The token itself never goes into a message: only what is wrong with it.
  if (token !== null && !token.startsWith("pk_live_")) {
    throw new UsageError("the token (--token or STORAGE_TOKEN) must start with pk_live_");
  }
  const retries = stringFlag(values.retries);
  return {
    server: server.replace(/\/+$/, ""),
    token,
    json: values.json === true,
    attempts: retries === undefined ? undefined : integerFlag("--retries", retries, 0, 20) + 1,
  };
}

function stringFlag(value: string | boolean | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** A whole number in [min, max], or a UsageError naming the flag. */
export function integerFlag(flag: string, raw: string, min: number, max: number): number {
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/** A size like 100MiB, 64KiB or 1048576 (bytes), or a UsageError naming the flag. */
export function sizeFlag(flag: string, raw: string): number {
  return parseSize(raw, flag, (message) => new UsageError(message));
}

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `Usage: storage COMMAND [ARGS] [--server URL] [--token TOKEN] [--json] [--retries N]

Commands:
${lines.join("\n")}

Global flags:
  --server URL    the service (default STORAGE_URL, else ${DEFAULT_SERVER})
  --token TOKEN   a pk_live_ token (default STORAGE_TOKEN; prefer the variable: flags are
                  visible to other users of the machine)
  --json          print exactly one JSON object on stdout
  --retries N     retries of network errors and 5xx answers per request (default 4)

Sizes take a unit: B, KiB, MiB, GiB (100MiB); a bare number is bytes.
Exit status: 0 ok, 1 the server refused, 2 usage, 3 verification failed, 4 network,
5 a local file could not be written, 130 interrupted (docs/client.md#exit-codes).
"storage COMMAND --help" shows one command.`;
}

export function commandHelp(command: CommandSpec): string {
  return `Usage: storage ${command.name}${command.synopsis ? ` ${command.synopsis}` : ""}
  ${command.summary}.
Global flags: --server URL, --token TOKEN, --json, --retries N (see "storage --help").`;
}
