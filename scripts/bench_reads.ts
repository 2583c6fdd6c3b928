/**
 * Bench workload 22: every read at the machine's speed. The service's reads
 * against the runtime itself and against each other, in the same run, with
 * the server's own CPU per unit beside the throughput (a 2-core loopback's
 * throughput swings with whatever shares the cores; CPU seconds per GiB, read
 * from /proc/<pid>/stat, much less):
 *
 *   whole     GET /p/ of a 100 MiB piece
 *   native    a bare Deno.serve streaming the same file by file.readable
 *   loop      a bare Deno.serve streaming it by 1 MiB reads in a byte stream's
 *             pull() (the best read loop found: the same-run ceiling)
 *   range     GET /p/ with a bounded Range of 94 MiB (starting inside a read)
 *   file      GET /f/ of the same 100 MiB stored as 4 pieces and a manifest
 *   before    (with --base DIR) GET /p/ of another checkout's service
 *   rangeBefore  (with --base DIR) the same bounded range from that service
 *
 * Each sample is --rep downloads in a row over one connection (curl); the
 * contenders take turns in a rotating order; figures are medians of --runs.
 * Then, under wrk (64 connections, --seconds): a 256 KiB piece, a 256 KiB
 * range of the big piece, a 256 KiB raw block of a CAR from /ipfs/, and a
 * 1 KiB piece (the small-piece cache), as requests/s and server CPU ms per
 * 1,000 requests; and, first of all, the service's peak RSS while 64 clients
 * download the 100 MiB piece at once. Talks only to 127.0.0.1 and stops what it started.
 *
 *   deno run -A scripts/bench_reads.ts [--runs 8] [--rep 4] [--seconds 5] [--base DIR]
 */
import { createHash } from "node:crypto";
import { scriptArgs } from "./lib/args.ts";
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { startBareDeno } from "./lib/baselines.ts";
import { cpuSecondsOf, rotated, sampleRss, settle } from "./lib/measure.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { buildCar } from "./bench_ipfs.ts";
import { storeManifest } from "./bench_ranges.ts";
import { pieceCid } from "../src/client/sdk/piece_cid.ts";

const MIB = 1024 * 1024;
const BIG = 100 * MIB;
const SPLIT = 4;
const RANGE = { offset: 1000, length: 94 * MIB };
const SMALL = 256 * 1024;
const ARGS = [
  ...["--sponsored-max-file-size", "1GiB", "--sponsored-daily-cap", "1000GiB"],
  ...["--max-uploads-per-client", "100000", "--log-requests", "false"],
];

export interface ReadsBenchOptions {
  runs: number;
  rep: number;
  seconds: number;
  dir: string;
  /** Another checkout (its root, "/" at the end), served as the "before" contender. */
  base?: string;
}

interface Transfer {
  GBps: Summary;
  cpuSecondsPerGiB: Summary;
}

interface Load {
  rps: Summary;
  cpuMsPer1000: Summary;
}

export interface ReadsBenchResult {
  transfers: Record<string, Transfer>;
  ratios: Record<string, { throughput: number; cpu: number }>;
  loads: Record<string, Load> | { skipped: string };
  loadRatios?: Record<string, { throughput: number; cpu: number }>;
  peakRssMiB64x100MiB: number;
  /** With --base: the same for the other checkout's service. */
  peakRssMiB64x100MiBBefore?: number;
}

/** `rep` GETs of url in a row on one connection; bytes, seconds and the server's CPU seconds. */
async function downloads(url: string, pid: number, rep: number, range?: string) {
  const args = ["-s", "-f", "-w", "%{size_download}\\n"];
  if (range) args.push("-H", `range: bytes=${range}`);
  for (let i = 0; i < rep; i++) args.push("-o", "/dev/null", url);
  const cpuBefore = cpuSecondsOf(pid);
  const started = performance.now();
  const out = await new Deno.Command("curl", { args, stdout: "piped" }).output();
  const seconds = (performance.now() - started) / 1000;
  if (!out.success) throw new Error(`curl ${url} failed (${out.code})`);
  const cpu = cpuSecondsOf(pid) - cpuBefore;
  const bytes = new TextDecoder().decode(out.stdout).trim().split("\n")
    .reduce((sum, n) => sum + Number(n), 0);
  return { bytes, seconds, cpu };
}

function ratio(ours: Summary, theirs: Summary): number {
  return Math.round((ours.median / theirs.median) * 100) / 100;
}

async function upload(service: SpawnedServer, cid: string, bytes: Uint8Array, type?: string) {
  const stored = await streamUpload({
    url: service.url,
    cid,
    size: bytes.length,
    chunk: bytes,
    contentType: type,
  });
  if (stored.status !== 200) throw new Error(`${cid}: ${stored.body}`);
}

/** The PieceCIDv2s of the big piece's SPLIT parts (a manifest lists pieces by those). */
async function partCids(big: Uint8Array<ArrayBuffer>): Promise<string[]> {
  const cids: string[] = [];
  for (let k = 0; k < SPLIT; k++) {
    const part = big.subarray(k * (BIG / SPLIT), (k + 1) * (BIG / SPLIT));
    cids.push((await pieceCid(part, { pool: null })).cid);
  }
  return cids;
}

/** The contenders' bytes, stored: the big piece whole and split, small pieces, a CAR. */
async function store(service: SpawnedServer, big: Uint8Array, pieces: string[]) {
  await upload(service, "benchreadsbig", big);
  for (let k = 0; k < SPLIT; k++) {
    await upload(service, pieces[k], big.subarray(k * (BIG / SPLIT), (k + 1) * (BIG / SPLIT)));
  }
  const sha = createHash("sha256").update(big).digest("hex");
  const file = await storeManifest(service, pieces, sha, BIG / SPLIT);
  await upload(service, "benchreadssmall", big.subarray(0, SMALL));
  await upload(service, "benchreads1k", big.subarray(0, 1024));
  const { car, cids } = buildCar(16, SMALL);
  await upload(service, "benchreadscar", car, "application/vnd.ipld.car");
  return { file, block: cids[7].toString() };
}

export async function benchReads(options: ReadsBenchOptions): Promise<ReadsBenchResult> {
  const big = new Uint8Array(BIG);
  for (let at = 0; at < BIG; at += 65536) crypto.getRandomValues(big.subarray(at, at + 65536));
  const bareDir = `${options.dir}/bare`;
  await Deno.mkdir(bareDir);
  await Deno.writeFile(`${bareDir}/big`, big);
  await Deno.mkdir(`${options.dir}/service`);
  await using service = await spawnServer(`${options.dir}/service`, ARGS);
  await using bare = await startBareDeno(bareDir);
  let before: SpawnedServer | null = null;
  if (options.base) {
    await Deno.mkdir(`${options.dir}/before`);
    before = await spawnServer(`${options.dir}/before`, ARGS, { root: options.base });
  }
  try {
    const pieces = await partCids(big);
    const { file, block } = await store(service, big, pieces);
    if (before) await store(before, big, pieces);
    // The background pass hashes what was just stored: let it finish, its CPU is not a read's.
    await settle(service, 120);
    if (before) await settle(before, 120);
    const svc = { url: service.url, pid: service.process.pid };
    // Memory first, on services that have served nothing yet: the heap a load leaves stays.
    const rss = await peakRss(svc);
    const rssBefore = before
      ? await peakRss({ url: before.url, pid: before.process.pid })
      : undefined;
    const last = RANGE.offset + RANGE.length - 1;
    const contenders: Record<string, { url: string; pid: number; range?: string }> = {
      whole: { url: `${svc.url}/p/benchreadsbig`, pid: svc.pid },
      native: { url: `${bare.url}/f/big`, pid: bare.pid },
      loop: { url: `${bare.url}/l/big`, pid: bare.pid },
      range: { url: `${svc.url}/p/benchreadsbig`, pid: svc.pid, range: `${RANGE.offset}-${last}` },
      file: { url: `${svc.url}/f/${file}`, pid: svc.pid },
      ...(before
        ? {
          before: { url: `${before.url}/p/benchreadsbig`, pid: before.process.pid },
          rangeBefore: {
            url: `${before.url}/p/benchreadsbig`,
            pid: before.process.pid,
            range: `${RANGE.offset}-${last}`,
          },
        }
        : {}),
    };
    const transfers = await measureTransfers(contenders, options);
    const t = transfers;
    const pair = (a: string, b: string) => ({
      throughput: ratio(t[a].GBps, t[b].GBps),
      // Less CPU is better: the reference's cost over ours.
      cpu: ratio(t[b].cpuSecondsPerGiB, t[a].cpuSecondsPerGiB),
    });
    const ratios: ReadsBenchResult["ratios"] = {
      "whole / native": pair("whole", "native"),
      "whole / loop": pair("whole", "loop"),
      "range / whole": pair("range", "whole"),
      "file / whole": pair("file", "whole"),
      ...(before
        ? {
          "whole / before": pair("whole", "before"),
          "range / range before": pair("range", "rangeBefore"),
        }
        : {}),
    };
    const loads = await measureLoads(svc, before, block, options);
    return {
      transfers,
      ratios,
      ...loads,
      peakRssMiB64x100MiB: rss,
      peakRssMiB64x100MiBBefore: rssBefore,
    };
  } finally {
    await before?.[Symbol.asyncDispose]();
  }
}

async function measureTransfers(
  contenders: Record<string, { url: string; pid: number; range?: string }>,
  options: ReadsBenchOptions,
): Promise<Record<string, Transfer>> {
  const series: Record<string, { GBps: number[]; cpu: number[] }> = {};
  for (const name of Object.keys(contenders)) series[name] = { GBps: [], cpu: [] };
  for (let run = 0; run < options.runs; run++) {
    for (const name of rotated(Object.keys(contenders), run)) {
      const { url, pid, range } = contenders[name];
      const { bytes, seconds, cpu } = await downloads(url, pid, options.rep, range);
      series[name].GBps.push(bytes / seconds / 1e9);
      series[name].cpu.push(cpu / (bytes / 2 ** 30));
    }
  }
  const out: Record<string, Transfer> = {};
  for (const [name, { GBps, cpu }] of Object.entries(series)) {
    out[name] = {
      GBps: summarize(GBps.map((v) => v * 100)),
      cpuSecondsPerGiB: summarize(cpu.map((v) => v * 100)),
    };
    // summarize rounds to 0.1: scaled by 100 above, back here, for two decimals.
    for (const s of [out[name].GBps, out[name].cpuSecondsPerGiB]) {
      s.median /= 100;
      s.min /= 100;
      s.max /= 100;
    }
  }
  return out;
}

/** 256 KiB piece, range and IPFS block, and 1 KiB GETs under wrk, in turn. */
async function measureLoads(
  svc: { url: string; pid: number },
  before: SpawnedServer | null,
  block: string,
  options: ReadsBenchOptions,
): Promise<Pick<ReadsBenchResult, "loads" | "loadRatios">> {
  if (!wrkAvailable()) return { loads: { skipped: "wrk is not installed" } };
  const at = MIB + 17; // inside the second 1 MiB read of the piece
  const contenders: Record<string, { url: string; pid: number; headers?: Record<string, string> }> =
    {
      piece256k: { url: `${svc.url}/p/benchreadssmall`, pid: svc.pid },
      range256k: {
        url: `${svc.url}/p/benchreadsbig`,
        pid: svc.pid,
        headers: { range: `bytes=${at}-${at + SMALL - 1}` },
      },
      ipfs256k: { url: `${svc.url}/ipfs/${block}?format=raw`, pid: svc.pid },
      get1k: { url: `${svc.url}/p/benchreads1k`, pid: svc.pid },
      ...(before
        ? { get1kBefore: { url: `${before.url}/p/benchreads1k`, pid: before.process.pid } }
        : {}),
    };
  const series: Record<string, { rps: number[]; cpu: number[] }> = {};
  for (const name of Object.keys(contenders)) series[name] = { rps: [], cpu: [] };
  const runs = Math.max(3, Math.round(options.runs / 2));
  for (let run = 0; run < runs; run++) {
    for (const name of rotated(Object.keys(contenders), run)) {
      const { url, pid, headers } = contenders[name];
      const cpuBefore = cpuSecondsOf(pid);
      const r = await runWrk({ url, connections: 64, seconds: options.seconds, headers });
      const cpu = cpuSecondsOf(pid) - cpuBefore;
      if (r.non2xx + r.socketErrors > 0) {
        throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.socketErrors} socket errors`);
      }
      series[name].rps.push(r.requestsPerSecond);
      series[name].cpu.push((cpu * 1000) / (r.requestsPerSecond * options.seconds / 1000));
    }
  }
  const loads: Record<string, Load> = {};
  for (const [name, { rps, cpu }] of Object.entries(series)) {
    loads[name] = { rps: summarize(rps), cpuMsPer1000: summarize(cpu) };
  }
  const pair = (a: string, b: string) => ({
    throughput: ratio(loads[a].rps, loads[b].rps),
    cpu: ratio(loads[b].cpuMsPer1000, loads[a].cpuMsPer1000),
  });
  return {
    loads,
    loadRatios: {
      "range256k / piece256k": pair("range256k", "piece256k"),
      "ipfs256k / piece256k": pair("ipfs256k", "piece256k"),
      ...(before ? { "get1k / get1kBefore": pair("get1k", "get1kBefore") } : {}),
    },
  };
}

/** The service's peak RSS (MiB) while 64 clients download the 100 MiB piece at once. */
async function peakRss(svc: { url: string; pid: number }): Promise<number> {
  const sampler = sampleRss(svc.pid);
  const clients = Array.from({ length: 64 }, () =>
    new Deno.Command("curl", {
      args: ["-s", "-f", "-o", "/dev/null", `${svc.url}/p/benchreadsbig`],
    }).output());
  const results = await Promise.all(clients);
  const peak = await sampler.stop();
  if (results.some((r) => !r.success)) throw new Error("a concurrent download failed");
  return peak;
}

if (import.meta.main) {
  const opts = scriptArgs(
    "Usage: bench_reads.ts [--runs 8] [--rep 4] [--seconds 5] [--base DIR]",
    {
      runs: { type: "number", integer: true, min: 1 },
      rep: { type: "number", integer: true, min: 1 },
      seconds: { type: "number", integer: true, min: 1 },
      base: { type: "string" },
    },
  );
  const dir = await Deno.makeTempDir({ prefix: "bench-reads-" });
  try {
    const result = await benchReads({
      runs: opts.runs ?? 8,
      rep: opts.rep ?? 4,
      seconds: opts.seconds ?? 5,
      dir,
      base: opts.base === undefined ? undefined : opts.base.replace(/\/?$/, "/"),
    });
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
