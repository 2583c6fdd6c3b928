/**
 * Entry point.
 *
 *   main.ts [serve] [flags]     run the service (see --help)
 *   main.ts rotate-key [flags]  replace the HMAC key: every token issued so far stops working
 *   main.ts token mint|list|revoke …   the operator's tokens (see `main.ts token`)
 *   main.ts backup DEST [flags]  a consistent copy (a data directory), beside running servers
 *   main.ts scrub [flags]        re-hash every stored piece; mark the corrupt ones
 *   main.ts migrate --from-data-dir DIR [flags]  copy the data directory into PostgreSQL / a bucket
 *   main.ts gc [--as-of TIME] [--dry-run] [--json]  remove pieces no deal wants any more
 *   main.ts handoff status|retry …  pieces at the storage provider (see docs/handoff.md)
 *
 * Serving prints one "Listening on" line on stdout and shuts down gracefully
 * on SIGINT/SIGTERM. Whatever stops a start (a bad flag, a port in use, a
 * data directory another process serves, missing permissions) is one line
 * `error: …` on stderr and exit status 2, never a stack trace.
 */
import { ConfigError, ENV_NAMES, loadConfig } from "./src/config/mod.ts";
import type { Config } from "./src/config/mod.ts";
import { KeyFileError } from "./src/auth/hmac_key.ts";
import { PostgresUnavailableError } from "./src/db/postgres/postgres_database.ts";
import type { OperatorCommandOptions } from "./src/commands/command_args.ts";
import { runTokenCommand } from "./src/commands/token_command.ts";
import { runBackupCommand } from "./src/commands/backup_command.ts";
import { runScrubCommand } from "./src/commands/scrub_command.ts";
import { runMigrateCommand } from "./src/commands/migrate_command.ts";
import { runGcCommand } from "./src/commands/gc_command.ts";
import { runRotateKeyCommand } from "./src/commands/rotate_key_command.ts";
import { runHandoffCommand } from "./src/commands/handoff_command.ts";
import { DirectoryLockedError } from "./src/kernel/fs/dir_lock.ts";
import { DatabaseTooNewError } from "./src/db/sqlite/database.ts";
import { startServer } from "./src/server/start.ts";
import { TlsFilesError } from "./src/net/tls_files.ts";
import { PayerKeyError } from "./src/handoff/errors.ts";

type Env = Record<string, string | undefined>;

/** The operator's commands (src/commands/); anything else is `serve`. */
const OPERATOR_COMMANDS: Record<string, (options: OperatorCommandOptions) => Promise<number>> = {
  "rotate-key": runRotateKeyCommand,
  token: runTokenCommand,
  backup: runBackupCommand,
  scrub: runScrubCommand,
  migrate: runMigrateCommand,
  gc: runGcCommand,
  handoff: runHandoffCommand,
};

export async function main(args: string[]): Promise<number> {
  const [command, rest] = args[0] === "serve" || Object.hasOwn(OPERATOR_COMMANDS, args[0] ?? "")
    ? [args[0], args.slice(1)]
    : ["serve", args];
  try {
    // --help needs no permission at all: it reads no variable.
    const wantsHelp = command === "serve" && (rest.includes("--help") || rest.includes("-h"));
    const env: Env = {};
    if (!wantsHelp) { for (const name of ENV_NAMES) env[name] = Deno.env.get(name); }
    if (command !== "serve") {
      return await OPERATOR_COMMANDS[command]({ args: rest, env, print: (t) => console.log(t) });
    }
    const loaded = loadConfig(rest, env);
    if (loaded.kind === "help") {
      console.log(loaded.text);
      return 0;
    }
    return await serve(loaded.config);
  } catch (error) {
    const message = startupErrorMessage(error);
    if (message === null) throw error;
    console.error(`error: ${message}`);
    return 2;
  }
}

/** The one line for errors an operator can fix; null for anything else (our bug). */
function startupErrorMessage(error: unknown): string | null {
  if (
    error instanceof ConfigError || error instanceof KeyFileError ||
    error instanceof DirectoryLockedError || error instanceof DatabaseTooNewError ||
    error instanceof PostgresUnavailableError ||
    error instanceof TlsFilesError || error instanceof PayerKeyError
  ) {
    return error.message;
  }
  if (error instanceof Deno.errors.AddrInUse) {
    return `Cannot listen: the address is already in use (${firstLine(error)}); ` +
      "choose another --port or stop the process that holds it";
  }
  if (error instanceof Deno.errors.NotCapable) {
    // Deno's message names the flag it wanted, e.g. "Requires write access to "/srv/x", run
    // again with the --allow-write flag".
    if (/\benv access\b/.test(error.message)) {
      return `Missing permission: ${firstLine(error)}. The server reads its STORAGE_* and ` +
        "PG* variables: --allow-env=STORAGE_*,PG* (as `deno task start` gives)";
    }
    return `Missing permission: ${firstLine(error)}. The data directory needs ` +
      "--allow-read=DIR --allow-write=DIR for the directory given as --data-dir";
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return `Permission denied by the operating system: ${firstLine(error)}`;
  }
  return null;
}

function firstLine(error: Error): string {
  return error.message.split("\n")[0];
}

async function serve(config: Config): Promise<number> {
  const server = await startServer({ config });
  const stopped = Promise.withResolvers<void>();
  const onSignal = () => server.shutdown().then(stopped.resolve, stopped.reject);
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  // Only now: a script that signals as soon as it reads this line gets a graceful shutdown.
  console.log(`Listening on ${server.url}/`);
  await stopped.promise;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
