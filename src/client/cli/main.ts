/**
 * `storage`: the user's command line for the service, on top of the client
 * SDK (src/client/sdk/). Run it with `deno task -q cli …`, install it on the PATH
 * with `deno task install-cli`, or compile it to a binary with `deno task
 * compile-cli`; docs/client.md is the manual.
 *
 *   storage cid FILE…                 storage upload FILE… [--piece-size SIZE] …
 *   storage download CID [-o PATH]    storage signup --email E --label L
 *   storage tokens list|revoke JTI    storage files | usage | limits | extend DEAL_ID
 *   storage delete DEAL_ID --yes      STORAGE_WALLET_KEY=0x… storage wallet login
 *
 * This entry point wires the real process to the commands: stdout for
 * results, stderr for the progress bar (terminals only) and the one error
 * line, Ctrl-C as an abort signal, STORAGE_URL / STORAGE_TOKEN (and
 * STORAGE_WALLET_KEY for wallet login) from the environment, and the
 * documented exit status (src/client/cli/errors.ts).
 */
import { StorageClient } from "../sdk/mod.ts";
import { nativeSha256 } from "../sdk/native_sha256.ts";
import { ACCOUNT_COMMANDS } from "./account.ts";
import { parseCommandLine } from "./args.ts";
import type { CommandLine, GlobalOptions } from "./args.ts";
import { downloadCommand } from "./download.ts";
import { EXIT, failureOf, InterruptedError, LocalFileError } from "./errors.ts";
import type { CliIo } from "./output.ts";
import { terminalProgress } from "./progress.ts";
import { cidCommand, uploadCommand } from "./upload.ts";
import { WALLET_KEY_VARIABLE, walletLoginCommand } from "./wallet.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** Runs one command line against `io`; resolves with the exit status. */
export async function runCommandLine(
  line: Extract<CommandLine, { kind: "run" }>,
  io: CliIo,
  env: Env = {},
) {
  const { command, args, flags, global } = line;
  if (command.name === "cid") return await cidCommand({ io, global, paths: args });
  if (command.name === "wallet login") {
    return await walletLoginCommand({ io, global, flags, key: env[WALLET_KEY_VARIABLE] });
  }
  using client = createClient(global);
  if (command.name === "upload") {
    return await uploadCommand({ io, global, client, paths: args, flags });
  }
  if (command.name === "download") {
    return await downloadCommand({ io, global, client, cid: args[0], flags });
  }
  const handler = ACCOUNT_COMMANDS[command.name];
  if (!handler) throw new Error(`no handler for "${command.name}"`);
  return await handler({ io, global, client, args, flags });
}

function createClient(global: GlobalOptions): StorageClient {
  return new StorageClient({
    server: global.server,
    token: global.token,
    retry: global.attempts === undefined ? undefined : { attempts: global.attempts },
    // The runtime's SHA-256 (a split file's manifest digest): ten times the portable one.
    sha256: nativeSha256,
  });
}

/** The process: argv and environment in, exit status out. */
export async function main(argv: readonly string[], env: Env): Promise<number> {
  const interrupt = new AbortController();
  const io = processIo(interrupt.signal);
  let interrupts = 0;
  let global: GlobalOptions | null = null;
  const onInterrupt = () => {
    // The first Ctrl-C stops the work and cleans up; a second one does not wait for that.
    if (++interrupts > 1) Deno.exit(EXIT.interrupted);
    interrupt.abort();
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  try {
    const line = parseCommandLine(argv, env);
    if (line.kind === "help") {
      await io.out(line.text + "\n");
      return EXIT.ok;
    }
    global = line.global;
    return await runCommandLine(line, io, env);
  } catch (error) {
    io.progress.clear();
    // After Ctrl-C, whatever failed (an aborted fetch, a cancelled stream) failed because of it.
    const interrupted = error instanceof InterruptedError ? error : new InterruptedError();
    const failure = failureOf(interrupt.signal.aborted ? interrupted : error, {
      server: global?.server,
      hasToken: global === null ? undefined : global.token !== null,
    });
    if (failure) {
      io.err(failure.line);
      return failure.exitCode;
    }
    // Not one of the expected failures: a bug. Say so, with what is needed to report it.
    io.err(`error: unexpected: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof Error && error.stack) io.err(error.stack);
    return 70;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}

function processIo(signal: AbortSignal): CliIo {
  const encoder = new TextEncoder();
  const writeStdout = async (bytes: Uint8Array) => {
    try {
      let offset = 0;
      while (offset < bytes.length) offset += await Deno.stdout.write(bytes.subarray(offset));
    } catch (error) {
      throw new LocalFileError(`cannot write to stdout: ${(error as Error).message}`, {
        exitCode: EXIT.localFile,
        cause: error,
      });
    }
  };
  return {
    out: (text) => writeStdout(encoder.encode(text)),
    stdoutBytes: new WritableStream({ write: (chunk) => writeStdout(chunk) }),
    err: (line) => console.error(line),
    progress: terminalProgress(),
    signal,
  };
}

if (import.meta.main) {
  const env: Record<string, string | undefined> = {};
  for (const name of ["STORAGE_URL", "STORAGE_TOKEN", WALLET_KEY_VARIABLE]) {
    env[name] = Deno.env.get(name);
  }
  Deno.exit(await main(Deno.args, env));
}
