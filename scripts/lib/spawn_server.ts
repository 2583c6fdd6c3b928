/**
 * Spawns main.ts as a separate process with exactly the permission flags of
 * the `start` task in deno.json (the same ones `deno task compile` bakes into
 * the binary), only pointing the data directory at a temp dir.
 */
export interface SpawnedServer extends AsyncDisposable {
  process: Deno.ChildProcess;
  url: string;
  stderr: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number>;
}

const ROOT = new URL("../..", import.meta.url).pathname; // the repository root
/** How much of the server's stderr `stderr()` returns: the last 1 MiB or more. */
const STDERR_TAIL_BYTES = 1024 * 1024;

/** The start task's words: its leading NAME=value settings apart, then `deno run …`. */
async function startTask(root: string): Promise<{ env: Record<string, string>; words: string[] }> {
  const config = JSON.parse(await Deno.readTextFile(`${root}deno.json`));
  const task: string = config.tasks.start;
  const words = task.split(/\s+/);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0] ?? "")) {
    const [name, value] = words.shift()!.split("=");
    env[name] = value;
  }
  if (words[0] !== "deno" || words[1] !== "run" || words.at(-1) !== "main.ts") {
    throw new Error(`unexpected start task: ${task}`);
  }
  return { env, words };
}

export async function startTaskFlags(dataDir: string, root = ROOT): Promise<string[]> {
  const { words } = await startTask(root);
  return words.slice(2, -1).map((w) => w.replaceAll("./data", dataDir));
}

/** The environment the start task sets for the server (glibc's malloc thresholds). */
export async function startTaskEnv(root = ROOT): Promise<Record<string, string>> {
  return (await startTask(root)).env;
}

export interface SpawnOptions {
  /** Runs the server on these CPUs only (taskset -c), e.g. "0": a bench's stand-in for a machine. */
  cpus?: string;
  /** More environment, e.g. the S3 keys (which no flag takes). */
  env?: Record<string, string>;
  /** Runs the server with at most this many open files (prlimit --nofile, soft and hard). */
  nofile?: number;
  /** Another checkout's main.ts (its root, "/" at the end): a bench's "before" contender. */
  root?: string;
}

export async function spawnServer(
  dataDir: string,
  args: string[] = [],
  options: SpawnOptions = {},
): Promise<SpawnedServer> {
  const root = options.root ?? ROOT;
  const flags = await startTaskFlags(dataDir, root);
  const command = [
    "run",
    ...flags,
    `${root}main.ts`,
    "--port",
    "0",
    "--data-dir",
    dataDir,
    ...args,
  ];
  // taskset and prlimit exec the program, so the child keeps its pid (kill and status work).
  const wrappers = [
    ...(options.nofile === undefined ? [] : ["prlimit", `--nofile=${options.nofile}`, "--"]),
    ...(options.cpus === undefined ? [] : ["taskset", "-c", options.cpus]),
  ];
  const [program, ...programArgs] = [...wrappers, Deno.execPath(), ...command];
  const process = new Deno.Command(program, {
    args: programArgs,
    cwd: root,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...await startTaskEnv(root), ...options.env },
  }).spawn();
  // Under load the service logs a line per request: keep only a bounded tail, undecoded,
  // so the client side of a benchmark spends no CPU and memory on it.
  const stderrTail: Uint8Array[] = [];
  let stderrTailBytes = 0;
  const stderrDone = process.stderr.pipeTo(
    new WritableStream({
      write(chunk) {
        stderrTail.push(chunk);
        stderrTailBytes += chunk.byteLength;
        while (stderrTailBytes - stderrTail[0].byteLength >= STDERR_TAIL_BYTES) {
          stderrTailBytes -= stderrTail.shift()!.byteLength;
        }
      },
    }),
  );
  const stderrText = () => new TextDecoder().decode(concatBytes(stderrTail));
  const stdout = process.stdout.getReader();
  const decoder = new TextDecoder();
  let stdoutText = "";
  let url: string | null = null;
  const deadline = Date.now() + 20_000;
  while (url === null && Date.now() < deadline) {
    const { value, done } = await stdout.read();
    if (done) break;
    stdoutText += decoder.decode(value, { stream: true });
    const match = /^Listening on (http:\/\/\S+)\/$/m.exec(stdoutText);
    if (match) url = match[1];
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  const stdoutDone = (async () => {
    while (!(await stdout.read()).done) { /* drain */ }
  })();
  const exited = (async () => {
    const status = await process.status;
    await Promise.all([stderrDone, stdoutDone]);
    return status.code;
  })();
  if (url === null) {
    try {
      process.kill("SIGKILL");
    } catch { /* already gone */ }
    await exited;
    throw new Error(`server did not print its listen line:\n${stdoutText}\n${stderrText()}`);
  }
  return {
    process,
    url,
    stderr: stderrText,
    exited,
    async [Symbol.asyncDispose]() {
      try {
        process.kill("SIGKILL");
      } catch { /* already exited */ }
      await exited;
    },
  };
}

function concatBytes(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Resident set size of a process in bytes (Linux /proc), or null where unavailable. */
export async function rssBytes(pid: number): Promise<number | null> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Sends an upload whose body is streamed from a generator with a fixed
 * Content-Length (fetch would use chunked encoding for a stream, which the
 * service refuses), over raw HTTP/1.1. Returns the status and the JSON body.
 */
export async function streamUpload(options: {
  url: string;
  /** The service's upload of this cid, unless `path` says otherwise. */
  cid?: string;
  path?: string;
  method?: string;
  size: number;
  chunk: Uint8Array;
  /** The chunk to send as the index-th (from 0), when they differ; default always `chunk`. */
  chunkAt?: (index: number) => Uint8Array;
  /** Default application/octet-stream. */
  contentType?: string;
  headers?: Record<string, string>;
}): Promise<{ status: number; body: string }> {
  const target = new URL(`${options.url}${options.path ?? `/api/upload?cid=${options.cid}`}`);
  const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
  try {
    const extra = Object.entries(options.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    const head = `${options.method ?? "POST"} ${target.pathname}${target.search} HTTP/1.1\r\n` +
      `Host: ${target.host}\r\n` +
      `Content-Type: ${options.contentType ?? "application/octet-stream"}\r\n` +
      `Content-Length: ${options.size}\r\n` +
      `Connection: close\r\n${extra}\r\n`;
    await writeAll(conn, new TextEncoder().encode(head));
    let sent = 0;
    for (let index = 0; sent < options.size; index++) {
      const chunk = options.chunkAt?.(index) ?? options.chunk;
      const piece = chunk.subarray(0, Math.min(chunk.length, options.size - sent));
      await writeAll(conn, piece);
      sent += piece.length;
    }
    const text = await new Response(conn.readable).text();
    return {
      status: Number(text.split(" ")[1]),
      body: text.slice(text.indexOf("\r\n\r\n") + 4),
    };
  } catch (error) {
    try {
      conn.close();
    } catch { /* closed by the stream */ }
    throw error;
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}
