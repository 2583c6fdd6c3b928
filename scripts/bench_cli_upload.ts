/**
 * Bench workload 7: a 1 GiB file uploaded through the CLI (`storage upload`,
 * run as a user runs it: its own process, the `cli` task's permission flags),
 * in 100 MiB pieces (the default) so it splits into 11 pieces and a manifest,
 * verified on both sides (the CLI hashes every piece, the server verifies each
 * PieceCIDv2 on the way in).
 *
 * Two contenders doing the same work, in the same run, alternating order:
 *   pipelined   the CLI as built: piece k+1 is hashed while piece k uploads
 *   sequential  `upload --sequential`: every piece cid first, then the uploads
 * The ratio is pipelined time / sequential time (lower is better).
 *
 * Every upload must send every piece: before each one, a stamp of the run and
 * contender is written at the start of every piece, so no piece is already
 * stored (the CLI would skip it).
 */
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";

const MIB = 1024 * 1024;
const PIECE = 100 * MIB;
const ROOT = new URL("..", import.meta.url).pathname;

/** The `cli` task's flags from deno.json (permissions and --config), as users run the CLI. */
export async function cliTaskFlags(): Promise<string[]> {
  const task: string = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks.cli;
  const run = task.slice(task.indexOf("deno run ") + "deno run ".length);
  const words = run.split(/\s+/).map((w) => w.replaceAll('"', "").replaceAll("$ROOT/", ROOT));
  if (words.at(-1) !== `${ROOT}src/client/cli/main.ts`) {
    throw new Error(`unexpected cli task: ${task}`);
  }
  return words;
}

export interface CliUploadOptions {
  service: SpawnedServer;
  /** Runs the CLI on these CPUs only (taskset -c); the server is pinned elsewhere by the caller. */
  clientCpus?: string;
  /** Where the file to upload is written. */
  dir: string;
  sizeBytes: number;
  runs: number;
  rotated<T>(list: readonly T[], run: number): T[];
}

export interface CliUploadResult {
  file: string;
  seconds: { pipelined: Summary; sequential: Summary };
  /** MiB/s of the median pipelined upload. */
  pipelinedMiBps: number;
  ratio: number;
}

export async function benchCliUpload(options: CliUploadOptions): Promise<CliUploadResult> {
  const { service, dir, sizeBytes, runs } = options;
  const token = await signupToken(service.url);
  const path = `${dir}/cli-upload.bin`;
  await writePatternFile(path, sizeBytes);
  const words = await cliTaskFlags();
  const flags = words.slice(0, -1);
  const script = words.at(-1)!;
  const contenders = [
    { name: "pipelined" as const, extra: [] as string[] },
    { name: "sequential" as const, extra: ["--sequential"] },
  ];
  const seconds = { pipelined: [] as number[], sequential: [] as number[] };
  let pieces = 0;
  for (let run = 0; run < runs; run++) {
    for (const [index, c] of options.rotated(contenders, run).entries()) {
      await stampPieces(path, sizeBytes, `run ${run} ${c.name} ${index}`);
      const started = performance.now();
      const cli = ["run", ...flags, script, "upload", path, "--json", ...c.extra];
      const output = await new Deno.Command(
        options.clientCpus === undefined ? Deno.execPath() : "taskset",
        {
          args: options.clientCpus === undefined
            ? cli
            : ["-c", options.clientCpus, Deno.execPath(), ...cli],
          env: { NO_COLOR: "1", STORAGE_URL: service.url, STORAGE_TOKEN: token },
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        },
      ).output();
      const elapsed = (performance.now() - started) / 1000;
      if (output.code !== 0) {
        throw new Error(`storage upload ${c.name}: ${new TextDecoder().decode(output.stderr)}`);
      }
      const result = JSON.parse(new TextDecoder().decode(output.stdout));
      const skipped = result.pieces.filter((p: { dealId: string | null }) => p.dealId === null);
      if (skipped.length > 0) throw new Error(`${c.name}: ${skipped.length} pieces were skipped`);
      pieces = result.pieces.length;
      seconds[c.name].push(elapsed);
      await settle(service);
    }
  }
  const pipelined = summarize(seconds.pipelined);
  const sequential = summarize(seconds.sequential);
  return {
    file: `${sizeBytes / MIB} MiB in ${pieces} pieces of ${PIECE / MIB} MiB, plus a manifest`,
    seconds: { pipelined, sequential },
    pipelinedMiBps: Math.round(sizeBytes / MIB / pipelined.median),
    ratio: pipelined.median / sequential.median,
  };
}

async function signupToken(url: string): Promise<string> {
  const response = await fetch(`${url}/api/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "bench-cli@example.org", label: "bench", quotaMb: 1024000 }),
  });
  if (response.status !== 201) throw new Error(`signup: ${await response.text()}`);
  return (await response.json()).token;
}

async function writePatternFile(path: string, size: number): Promise<void> {
  const chunk = new Uint8Array(MIB);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31 + 7) & 0xff;
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  for (let offset = 0; offset < size; offset += chunk.length) {
    const part = chunk.subarray(0, Math.min(chunk.length, size - offset));
    let written = 0;
    while (written < part.length) written += await file.write(part.subarray(written));
  }
}

/** Writes `stamp` and the piece's number at the start of every piece, so every piece cid is new. */
async function stampPieces(path: string, size: number, stamp: string): Promise<void> {
  using file = await Deno.open(path, { write: true });
  for (let offset = 0; offset < size; offset += PIECE) {
    const bytes = new TextEncoder().encode(`${stamp} piece ${offset / PIECE}`.padEnd(64, "."));
    await file.seek(offset, Deno.SeekMode.Start);
    const part = bytes.subarray(0, Math.min(bytes.length, size - offset));
    let written = 0;
    while (written < part.length) written += await file.write(part.subarray(written));
  }
}

/** Waits (untimed) until the server has hashed what it acknowledged, up to a minute. */
async function settle(service: SpawnedServer): Promise<void> {
  for (let i = 0; i < 6000; i++) {
    const health = await (await fetch(`${service.url}/healthz`)).json();
    if (health.digests.backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the service did not finish hashing within 60 s");
}
