/**
 * Runs wrk (Debian package) against 127.0.0.1 for a fixed time and reads its
 * summary: requests/s, p99 latency, non-2xx answers and socket errors.
 */
export interface WrkResult {
  requestsPerSecond: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: number;
}

export function wrkAvailable(): boolean {
  try {
    return Deno.statSync("/usr/bin/wrk").isFile;
  } catch {
    return false;
  }
}

function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value);
  if (!match) return NaN;
  const n = Number(match[1]);
  return match[2] === "us"
    ? n / 1000
    : match[2] === "ms"
    ? n
    : match[2] === "s"
    ? n * 1000
    : n * 60000;
}

export async function runWrk(options: {
  url: string;
  connections: number;
  seconds: number;
  /** A Lua script (its text), e.g. to send POST requests. */
  script?: string;
  /** Request headers, e.g. a Range. */
  headers?: Record<string, string>;
  env?: Record<string, string>;
}): Promise<WrkResult> {
  if (!new URL(options.url).hostname.startsWith("127.")) {
    throw new Error("wrk targets 127.0.0.1 only");
  }
  const args = [
    "-t2",
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    "--latency",
    "--timeout",
    "10s",
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    args.push("-H", `${name}: ${value}`);
  }
  let scriptPath: string | null = null;
  if (options.script) {
    scriptPath = await Deno.makeTempFile({ suffix: ".lua" });
    await Deno.writeTextFile(scriptPath, options.script);
    args.push("-s", scriptPath);
  }
  args.push(options.url);
  try {
    const out = await new Deno.Command("/usr/bin/wrk", { args, env: options.env, stdout: "piped" })
      .output();
    const text = new TextDecoder().decode(out.stdout);
    const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
    const p99 = /^\s+99%\s+(\S+)/m.exec(text);
    if (!rps || !p99) throw new Error(`cannot read wrk output:\n${text}`);
    const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(text);
    const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
      text,
    );
    return {
      requestsPerSecond: Math.round(Number(rps[1])),
      p99Ms: Math.round(toMs(p99[1]) * 100) / 100,
      non2xx: non2xx ? Number(non2xx[1]) : 0,
      socketErrors: errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
    };
  } finally {
    if (scriptPath) await Deno.remove(scriptPath).catch(() => {});
  }
}

/** A wrk script that POSTs 1 KiB bodies, each under a fresh cid. */
export const UPLOAD_SCRIPT = `
local counter = 0
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  body = string.rep("x", 1024)
  headers = { ["Content-Type"] = "application/octet-stream" }
  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
  prefix = os.getenv("BENCH_PREFIX") or "bench"
end
function request()
  counter = counter + 1
  local cid = string.format("%s%02d%012d", prefix, tid, counter)
  return wrk.format("POST", "/api/upload?cid=" .. cid, headers, body)
end
`;
