/**
 * The `storage` CLI as a user runs it: a separate process with exactly the
 * permission flags of the `cli` task in deno.json (read from it, so tests
 * and users get the same), the outer shell's STORAGE_URL/STORAGE_TOKEN kept
 * out. Shared by the CLI's test files.
 */
import { assertEquals, assertMatch } from "./assert.ts";

export const ROOT = new URL("../..", import.meta.url).pathname;
export const CLI = `${ROOT}src/client/cli/main.ts`;
export const KIB = 1024;

/**
 * The `cli` task's flags (permissions and --config), read from deno.json the
 * way scripts/lib/spawn_server.ts reads the start task's, so the tests run
 * the CLI with exactly what users get.
 */
export async function cliTaskFlags(): Promise<string[]> {
  const task: string = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks.cli;
  const run = task.slice(task.indexOf("deno run ") + "deno run ".length);
  const words = run.split(/\s+/).map((w) => w.replaceAll('"', "").replaceAll("$ROOT/", ROOT));
  assertEquals(words.at(-1), CLI, `the cli task runs ${CLI}: ${task}`);
  return words.slice(0, -1);
}
export const FLAGS = await cliTaskFlags();

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  stdoutBytes: Uint8Array;
}

export interface CliOptions {
  env?: Record<string, string>;
  cwd?: string;
}

/** Runs `storage …` to completion; STORAGE_URL/STORAGE_TOKEN of the outer shell never leak in. */
export async function cli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  const output = await spawnCli(args, options).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    stdoutBytes: output.stdout,
  };
}

export function spawnCli(args: string[], options: CliOptions = {}): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, CLI, ...args],
    cwd: options.cwd ?? ROOT,
    env: { NO_COLOR: "1", STORAGE_URL: "", STORAGE_TOKEN: "", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs the CLI and expects exit 0 and a quiet stderr (no progress bar off a terminal). */
export async function cliOk(args: string[], options: CliOptions = {}): Promise<CliRun> {
  const run = await cli(args, options);
  assertEquals(run.code, 0, `storage ${args.join(" ")}:\n${run.stderr}`);
  assertEquals(run.stderr, "", "nothing on stderr when it is not a terminal");
  return run;
}

/** Exit status and exactly one `error: …` line on stderr, without a stack trace. */
export function assertFailure(run: CliRun, code: number, line: RegExp) {
  assertEquals(run.code, code, `exit status; stderr:\n${run.stderr}`);
  const lines = run.stderr.trimEnd().split("\n");
  assertEquals(lines.length, 1, `one line on stderr:\n${run.stderr}`);
  assertMatch(lines[0], line);
  assertEquals(/\bat .*\.ts:\d+/.test(run.stderr), false, "no stack trace");
}

/** A temp directory's prefix naming the test, for withTempDir. */
export function dirPrefix(t: { name: string }): string {
  return `cli-${t.name.replace(/\W+/g, "-").slice(0, 30)}-`;
}

export function randomBytes(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  for (let offset = 0; offset < size; offset += 65536) {
    crypto.getRandomValues(bytes.subarray(offset, Math.min(size, offset + 65536)));
  }
  return bytes;
}
