/**
 * main.ts as its own process, the way an operator runs it: with exactly the
 * permission flags given (default: the start task's, for a data directory),
 * its exit status and output captured. Killed (by its pid) after a minute so
 * a hung command fails the test instead of stalling the suite.
 */
import { startTaskFlags } from "../../scripts/lib/spawn_server.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const KILL_AFTER_MS = 60_000;

export interface MainRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runMain(
  args: string[],
  options: { flags?: string[]; dataDir?: string; env?: Record<string, string> } = {},
): Promise<MainRun> {
  const flags = options.flags ?? await startTaskFlags(options.dataDir ?? "./data");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, `${ROOT}main.ts`, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...options.env },
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS);
  try {
    const out = await child.output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Any Deno command line as its own process, in `cwd`, its output captured.
 * With `clearEnv`, the child sees only `env` and what Deno needs to find its
 * cache (PATH, HOME, DENO_DIR, XDG_CACHE_HOME): a user's shell, not the test's.
 */
export async function runDeno(
  args: string[],
  options: { cwd: string; env?: Record<string, string>; clearEnv?: boolean },
): Promise<MainRun> {
  const env: Record<string, string> = { NO_COLOR: "1", ...options.env };
  if (options.clearEnv) {
    for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] ??= value;
    }
  }
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: options.cwd,
    clearEnv: options.clearEnv,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** A file's permission bits as octal text, e.g. "600". */
export function modeOf(path: string): string {
  return (Deno.statSync(path).mode! & 0o777).toString(8);
}
