/**
 * Bench: `main.ts backup` throughput while the server serves. A server (the
 * start task's flags, its own process) is filled with N pieces through its
 * upload API, sizes cycling 4 KiB, 64 KiB, 1 MiB and 8 MiB; then, a few times
 * over, `main.ts backup` (its own process, read access to the live directory
 * and write access to the backup only) copies the directory while readers
 * keep fetching pieces from the server and check the bytes they get.
 *
 * Reported: the backup's own MiB/s (pieces and database over its run, from
 * its summary) and the wall time of the whole command (process start
 * included), each as median, min and max; and the retrievals per second the
 * server answered during the backups. The pieces were just written, so reads
 * come from the page cache; each backup's writes are fsynced.
 *
 *   deno run -A scripts/bench_backup.ts [--pieces 400] [--runs 3] [--readers 2]
 *
 * Talks only to 127.0.0.1 and stops only what it started, by PID.
 */
import { scriptArgs } from "./lib/args.ts";
import { spawnServer } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";

const KIB = 1024;
const MIB = 1024 * KIB;
const SIZES = [4 * KIB, 64 * KIB, MIB, 8 * MIB];
const UPLOADERS = 4;
const ROOT = new URL("..", import.meta.url).pathname;

export interface BackupBenchOptions {
  /** Pieces stored before the backups. */
  pieces: number;
  /** Backups made, each into a new directory. */
  runs: number;
  /** Concurrent retrieval loops while each backup runs. */
  readers: number;
  /** Where the data directory and the backups go (removed by the caller). */
  dir: string;
}

export interface BackupBenchResult {
  pieces: number;
  bytes: number;
  /** The backup's own figure: pieces and database copied per second. */
  mibPerSecond: Summary;
  /** The whole command, process start included. */
  wallSeconds: Summary;
  /** Retrievals answered per second while the backups ran. */
  retrievalsPerSecond: number;
}

export async function benchBackup(options: BackupBenchOptions): Promise<BackupBenchResult> {
  const dataDir = `${options.dir}/data`;
  await using server = await spawnServer(dataDir, ["--sponsored-daily-cap", "1TiB"]);
  const stored = await fill(server, options.pieces);
  const rates: number[] = [];
  const walls: number[] = [];
  let retrievals = 0;
  let busySeconds = 0;
  for (let run = 0; run < options.runs; run++) {
    const destination = `${options.dir}/backup-${run}`;
    const readers = readLoad(server, stored, options.readers);
    const started = performance.now();
    const summary = await runBackup(dataDir, destination);
    const wall = (performance.now() - started) / 1000;
    retrievals += await readers.stop();
    busySeconds += wall;
    if (summary.pieces !== stored.length) {
      throw new Error(`backup ${run} copied ${summary.pieces} of ${stored.length} pieces`);
    }
    rates.push(summary.mibPerSecond);
    walls.push(wall);
    await Deno.remove(destination, { recursive: true });
  }
  return {
    pieces: stored.length,
    bytes: stored.reduce((sum, piece) => sum + piece.size, 0),
    mibPerSecond: summarize(rates),
    wallSeconds: summarize(walls),
    retrievalsPerSecond: Math.round(retrievals / busySeconds),
  };
}

interface StoredPiece {
  cid: string;
  size: number;
  /** Its number, which fixes its content (pieceBytes). */
  n: number;
}

/** Content of piece n: a stamp naming it, then one repeated byte. */
function pieceBytes(n: number, size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size).fill(n & 0xff);
  bytes.set(new TextEncoder().encode(`bench-backup piece ${n} `).subarray(0, size));
  return bytes;
}

/** Length, stamp and last byte (pieces are at least 4 KiB): cheap, so the CPU goes to the backup. */
function looksRight(bytes: Uint8Array, piece: StoredPiece): boolean {
  const head = pieceBytes(piece.n, 64);
  return bytes.length === piece.size && bytes.at(-1) === (piece.n & 0xff) &&
    head.every((byte, at) => byte === bytes[at]);
}

async function fill(server: SpawnedServer, count: number): Promise<StoredPiece[]> {
  const stored: StoredPiece[] = [];
  let next = 0;
  const uploader = async () => {
    for (let n = next++; n < count; n = next++) {
      const size = SIZES[n % SIZES.length];
      const cid = `benchbackup${String(n).padStart(6, "0")}`;
      const response = await fetch(`${server.url}/api/upload?cid=${cid}`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: pieceBytes(n, size),
      });
      if (response.status !== 200) throw new Error(`upload ${cid}: ${await response.text()}`);
      await response.body?.cancel();
      stored.push({ cid, size, n });
    }
  };
  await Promise.all(Array.from({ length: UPLOADERS }, uploader));
  return stored;
}

/** Readers fetching pieces in turn and checking them, until stop(); it returns how many. */
function readLoad(server: SpawnedServer, stored: StoredPiece[], readers: number) {
  let stopped = false;
  let done = 0;
  const reader = async (offset: number) => {
    for (let i = offset; !stopped; i += readers) {
      const piece = stored[i % stored.length];
      const response = await fetch(`${server.url}/p/${piece.cid}`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (response.status !== 200 || !looksRight(bytes, piece)) {
        throw new Error(`retrieval of ${piece.cid} during the backup: ${response.status}`);
      }
      done++;
    }
  };
  const running = Promise.all(Array.from({ length: readers }, (_, i) => reader(i)));
  return {
    async stop(): Promise<number> {
      stopped = true;
      await running;
      return done;
    },
  };
}

async function runBackup(
  dataDir: string,
  destination: string,
): Promise<{ pieces: number; mibPerSecond: number }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env=STORAGE_*",
      `--allow-read=${dataDir},${destination}`,
      `--allow-write=${destination}`,
      `${ROOT}main.ts`,
      "backup",
      destination,
      "--data-dir",
      dataDir,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (output.code !== 0) {
    throw new Error(`backup: exit ${output.code}: ${new TextDecoder().decode(output.stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

if (import.meta.main) {
  const usage =
    "Usage: deno run -A scripts/bench_backup.ts [--pieces 400] [--runs 3] [--readers 2]";
  const args = scriptArgs(usage, {
    pieces: { type: "number", default: 400, integer: true, min: 1 },
    runs: { type: "number", default: 3, integer: true, min: 1 },
    readers: { type: "number", default: 2, integer: true, min: 0 },
  });
  const dir = await Deno.makeTempDir({ prefix: "bench-backup-" });
  try {
    const result = await benchBackup({ ...args, dir });
    const gib = (result.bytes / 1024 / MIB).toFixed(2);
    console.log(
      `backup of ${result.pieces} pieces (${gib} GiB) while serving ` +
        `${result.retrievalsPerSecond} retrievals/s: ` +
        `${result.mibPerSecond.median} MiB/s median ` +
        `(min ${result.mibPerSecond.min}, max ${result.mibPerSecond.max}); ` +
        `${result.wallSeconds.median} s per command, process start included`,
    );
    console.log(JSON.stringify(result));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
