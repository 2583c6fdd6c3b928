/**
 * The one shape every operator command has (`main.ts token`, `backup`,
 * `scrub`, `gc`, `migrate`, `rotate-key`), written once so each command
 * file holds only its own work: read the command line (and answer --help),
 * run the work on the backends it opens, close them whatever happens (the
 * last opened first), print the report and return the exit status.
 *
 * Backends are opened as the server opens them (backends/open.ts), quietly
 * (the command prints its own result) and without a lock unless asked for.
 * An error the operator can act on is the one line `error: …` main.ts prints
 * (a ConfigError, exit status 2): a store that failed midway always is, and
 * so is any error class the command names.
 */
import { openBackends } from "../backends/open.ts";
import type { BackendNeeds, OpenBackendsOptions, OpenedBackends } from "../backends/open.ts";
import { systemClock } from "../kernel/clock.ts";
import { ConfigError, loadConfig } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import { silentLogger } from "../kernel/log.ts";
import { StoreError } from "../driver/driver.ts";
import { parseCommandArgs } from "./command_args.ts";
import type { CommandArgs, CommandArgsOptions, OperatorCommandOptions } from "./command_args.ts";

/** A command line read: its positionals, its own flags and the config the server's flags make. */
export type ParsedCommand = Extract<CommandArgs, { kind: "command" }>;

/** What a command opens: which backends, the data directory's access, and a lock if any. */
export type CommandBackendsOptions<N extends BackendNeeds> =
  & Pick<OpenBackendsOptions<N>, "needs" | "dataDir">
  & { lock?: OpenBackendsOptions<N>["lock"] };

/** Opens backends for the command's run; runOperatorCommand closes them after it. */
export type OpenForCommand = <const N extends BackendNeeds>(
  config: Config,
  options: CommandBackendsOptions<N>,
) => Promise<OpenedBackends<N>>;

export interface CommandOutcome {
  /** What the command prints: text as it is, anything else as indented JSON. */
  report: unknown;
  /** 0 (the default): done; 1: done, with failures the report names. */
  status?: 0 | 1;
}

export interface OperatorCommand {
  /**
   * Its command line: its own usage, flags and positionals beside the
   * server's flags, and what --help prints (default `Usage: ` and the usage);
   * or "server flags" for a command that takes the server's alone, whose
   * --help is the server's.
   */
  commandLine: (Omit<CommandArgsOptions, "args" | "env"> & { help?: string }) | "server flags";
  /** Errors besides a StoreError whose message is the operator's to act on. */
  oneLineErrors?: (abstract new (...args: never[]) => Error)[];
  /** The work: checks that need nothing opened first, then what it opens with `open`. */
  run(command: ParsedCommand, open: OpenForCommand): Promise<CommandOutcome>;
}

export async function runOperatorCommand(
  options: OperatorCommandOptions,
  command: OperatorCommand,
): Promise<number> {
  const parsed = parseCommandLine(options, command.commandLine);
  if (parsed.kind === "help") {
    options.print(parsed.text);
    return 0;
  }
  const opened: OpenedBackends[] = [];
  const open: OpenForCommand = async (config, backendOptions) => {
    const backends = await openBackends(config, {
      lock: "none",
      ...backendOptions,
      logger: silentLogger,
      clock: systemClock,
    });
    opened.push(backends);
    return backends;
  };
  try {
    const { report, status = 0 } = await command.run(parsed, open);
    options.print(typeof report === "string" ? report : JSON.stringify(report, null, 2));
    return status;
  } catch (error) {
    const oneLine = [StoreError, ...command.oneLineErrors ?? []];
    if (oneLine.some((kind) => error instanceof kind)) {
      throw new ConfigError((error as Error).message);
    }
    throw error;
  } finally {
    for (const backends of opened.reverse()) await backends.close();
  }
}

function parseCommandLine(
  options: OperatorCommandOptions,
  commandLine: OperatorCommand["commandLine"],
): ParsedCommand | { kind: "help"; text: string } {
  if (commandLine === "server flags") {
    const loaded = loadConfig(options.args, options.env);
    if (loaded.kind === "help") return { kind: "help", text: loaded.text };
    return { kind: "command", positionals: [], flags: {}, config: loaded.config };
  }
  const parsed = parseCommandArgs({ ...options, ...commandLine });
  if (parsed.kind === "help") {
    return { kind: "help", text: commandLine.help ?? `Usage: ${commandLine.usage}` };
  }
  return parsed;
}
