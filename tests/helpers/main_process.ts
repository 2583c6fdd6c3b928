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

/** A file's permission bits as octal text, e.g. "600". */
export function modeOf(path: string): string {
  return (Deno.statSync(path).mode! & 0o777).toString(8);
}
