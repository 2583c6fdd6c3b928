/**
 * Bench: what the connection bounds cost on the normal load. Two servers
 * alike but for --connection-bounds (the own accept loop, or Deno.serve
 * unbounded), loaded in turn, rotated each round so machine noise hits both
 * alike: 1 KiB retrievals under wrk (64 connections, kept alive: workload
 * 3's load) and 100 MiB uploads. Reported: each figure's median, min and
 * max, and the ratios bounded / unbounded (goal >= 0.95), and the server's
 * CPU time per request, which a machine shared with other work moves less.
 *
 *   deno run -A scripts/bench_bounds_cost.ts [--runs 3] [--transfer-runs 5] [--seconds 10]
 *
 * Talks only to 127.0.0.1 and stops only what it started, by PID.
 */
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { cpuSecondsOf, rotated, settle } from "./lib/measure.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";

const MIB = 1024 * 1024;

export interface BoundsCostOptions {
  /** Rounds of the 1 KiB load (each: one wrk run per server). */
  runs: number;
  /** 100 MiB uploads per server. */
  transferRuns: number;
  /** Seconds of each wrk run. */
  seconds: number;
  /** Flags both servers get. */
  serverArgs: string[];
}

export interface BoundsCostResult {
  retrieve1KiB_rps: { bounded: Summary; unbounded: Summary; ratio: number };
  /** The server's CPU time per request (utime + stime over the run), in µs. */
  retrieve1KiB_serverCpuMicrosecondsPerRequest: {
    bounded: Summary;
    unbounded: Summary;
    ratio: number;
  };
  upload100MiB_MiBps: { bounded: Summary; unbounded: Summary; ratio: number };
}

type Contender = { name: "bounded" | "unbounded"; service: SpawnedServer };

export async function benchBoundsCost(options: BoundsCostOptions): Promise<BoundsCostResult> {
  if (!wrkAvailable()) throw new Error("wrk is not installed (apt-get install wrk)");
  const dirs = [
    await Deno.makeTempDir({ prefix: "bench-bounded-" }),
    await Deno.makeTempDir({ prefix: "bench-unbounded-" }),
  ];
  try {
    await using bounded = await spawnServer(dirs[0], options.serverArgs);
    await using unbounded = await spawnServer(dirs[1], [
      ...options.serverArgs,
      "--connection-bounds",
      "false",
    ]);
    const contenders: Contender[] = [
      { name: "bounded", service: bounded },
      { name: "unbounded", service: unbounded },
    ];
    const chunk = new Uint8Array(MIB).map((_, i) => (i * 31 + 7) & 0xff);
    for (const { service } of contenders) {
      await streamUpload({ url: service.url, cid: "benchboundssmall", size: 1024, chunk });
      await (await fetch(`${service.url}/p/benchboundssmall`)).bytes(); // into the small-piece cache
    }
    const rps = { bounded: [] as number[], unbounded: [] as number[] };
    const cpu = { bounded: [] as number[], unbounded: [] as number[] };
    for (let round = 0; round < options.runs; round++) {
      for (const { name, service } of rotated(contenders, round)) {
        const cpuBefore = cpuSecondsOf(service.process.pid);
        const result = await runWrk({
          url: `${service.url}/p/benchboundssmall`,
          connections: 64,
          seconds: options.seconds,
        });
        const cpuUsed = cpuSecondsOf(service.process.pid) - cpuBefore;
        if (result.non2xx + result.socketErrors > 0) {
          throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.socketErrors} errors`);
        }
        rps[name].push(result.requestsPerSecond);
        // The server's own CPU per request: steadier than req/s on a machine shared with others.
        cpu[name].push((cpuUsed / (result.requestsPerSecond * options.seconds)) * 1e6);
      }
    }
    const uploads = { bounded: [] as number[], unbounded: [] as number[] };
    for (let run = 0; run < options.transferRuns; run++) {
      for (const { name, service } of rotated(contenders, run)) {
        chunk[0] = run;
        chunk[1] = name === "bounded" ? 1 : 2;
        const started = performance.now();
        const answer = await streamUpload({
          url: service.url,
          cid: `benchbounds${name}${run}x`,
          size: 100 * MIB,
          chunk,
        });
        if (answer.status !== 200) throw new Error(`${name}: ${answer.status} ${answer.body}`);
        uploads[name].push(100 / ((performance.now() - started) / 1000));
        await settle(service);
      }
    }
    return {
      retrieve1KiB_rps: ratioOf(rps),
      retrieve1KiB_serverCpuMicrosecondsPerRequest: ratioOf(cpu),
      upload100MiB_MiBps: ratioOf(uploads),
    };
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function ratioOf(series: { bounded: number[]; unbounded: number[] }) {
  const bounded = summarize(series.bounded);
  const unbounded = summarize(series.unbounded);
  return { bounded, unbounded, ratio: Math.round((bounded.median / unbounded.median) * 100) / 100 };
}

if (import.meta.main) {
  const flag = (name: string, fallback: number) => {
    const i = Deno.args.indexOf(`--${name}`);
    return i === -1 ? fallback : Number(Deno.args[i + 1]);
  };
  const result = await benchBoundsCost({
    runs: flag("runs", 3),
    transferRuns: flag("transfer-runs", 5),
    seconds: flag("seconds", 10),
    serverArgs: ["--sponsored-max-file-size", "1GiB", "--sponsored-daily-cap", "100GiB"],
  });
  console.log(JSON.stringify(result, null, 2));
}
