/**
 * The README's start command, `npx -y deno@2.9.6 task start`, stops when its npx process gets
 * SIGTERM. The chain is npm → shell → `deno task` → `deno run main.ts`; with Debian's /bin/sh
 * as npm's script shell the signal stopped at the shell and the server kept running, orphaned.
 * The repository's .npmrc makes npm use bash, which execs `deno task`, which passes the signal
 * on. The test records every process the command started (from /proc, by pid and start time),
 * signals npx only, and waits for all of them to be gone, the server having logged its graceful
 * "stopped". Survivors are killed by pid at the end: only processes this test started.
 */
import { assertMatch, assertOk } from "../helpers/assert.ts";
import { eventually, within } from "../helpers/wait.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** fetch, but a request gives up after 15 s: a hung proxy or server fails the test, not stalls it. */
function fetch(input: string, init: RequestInit = {}): Promise<Response> {
  return globalThis.fetch(input, { signal: AbortSignal.timeout(15_000), ...init });
}

interface Proc {
  pid: number;
  /** Start time in clock ticks since boot: tells a process from a later one with its pid. */
  start: string;
  args: string[];
}

function statOf(pid: number): { ppid: number; start: string } | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // After "pid (comm) ": state, ppid, … with starttime the 20th field after the comm.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), start: fields[19] };
  } catch {
    return null;
  }
}

function argsOf(pid: number): string[] {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").filter((a) => a !== "");
  } catch {
    return [];
  }
}

/** Every live descendant of pid. */
function descendants(pid: number): Proc[] {
  const children = new Map<number, number[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = statOf(Number(entry.name));
    if (stat) children.set(stat.ppid, [...children.get(stat.ppid) ?? [], Number(entry.name)]);
  }
  const found: Proc[] = [];
  const queue = [...children.get(pid) ?? []];
  while (queue.length > 0) {
    const next = queue.shift()!;
    const stat = statOf(next);
    if (stat) found.push({ pid: next, start: stat.start, args: argsOf(next) });
    queue.push(...children.get(next) ?? []);
  }
  return found;
}

function alive(proc: Proc): boolean {
  return statOf(proc.pid)?.start === proc.start;
}

function hasNpx(): boolean {
  return (Deno.env.get("PATH") ?? "").split(":").some((dir) => {
    try {
      return Deno.statSync(`${dir}/npx`).isFile;
    } catch {
      return false;
    }
  });
}

Deno.test({
  name: "start task: SIGTERM to the README's npx command stops the server gracefully",
  ignore: !hasNpx() && Deno.env.get("CI") !== "true",
  async fn() {
    // The README's command from the repository root; no data directory, so nothing on disk.
    const npx = new Deno.Command("npx", {
      args: ["-y", "deno@2.9.6", "task", "start", "--port", "0", "--data-dir", ""],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(npx.stderr).text();
    const stdout = npx.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let exited = false;
    const status = npx.status.finally(() => exited = true);
    let started: Proc[] = [];
    try {
      let printed = "";
      const listening = async () => {
        while (!/Listening on http:\/\/\S+\//.test(printed)) {
          const { value, done } = await stdout.read();
          if (done) throw new Error(`the command ended without listening: ${await stderr}`);
          printed += value;
        }
      };
      // The first run may fetch Deno from npm.
      await within(listening(), 120_000, "the Listening line");
      const url = /Listening on (http:\/\/\S+?)\//.exec(printed)![1];
      started = descendants(npx.pid);
      const server = started.find((p) => p.args.includes("run") && p.args.includes("main.ts"));
      assertOk(server, `the server among ${JSON.stringify(started.map((p) => p.args))}`);
      await (await fetch(`${url}/healthz`)).body?.cancel();

      npx.kill("SIGTERM");
      await within(status, 30_000, "npx exiting on SIGTERM");
      await eventually(
        () => started.every((p) => !alive(p)),
        "every process the command started gone",
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      assertMatch(await stderr, /"msg":"stopped"/, "the server's graceful shutdown");
    } finally {
      for (const proc of started) if (alive(proc)) Deno.kill(proc.pid, "SIGKILL");
      if (!exited) npx.kill("SIGKILL");
      await status;
      await stdout.cancel();
      await stderr;
    }
  },
});
