/**
 * Workload 22 of the bench: the hand-off to a PDP storage provider. The
 * service (main.ts with the start task's permissions, --handoff pdp) hands
 * `pieces` opaque 1 MiB pieces to the fake Curio provider of the tests
 * (tests/helpers/fake_pdp/, in this process, on 127.0.0.1), which fetches
 * every piece from the service's /piece/ and recomputes its PieceCID, as
 * Curio does. Measured: pieces live per second, and retrieval (64 KiB GETs,
 * wrk) and upload (100 MiB) throughput while the provider pulls, against the
 * same before it starts (pulls held); and, since on two cores the clients
 * and the fake provider (which hashes every piece it pulls: on a real
 * deployment another machine) starve each other, the service's own CPU time
 * per request and per MiB uploaded, from /proc/<pid>/stat, during against
 * before, and its CPU time per piece handed off.
 *
 *   deno run -A scripts/bench_handoff.ts [--pieces 1000] [--seconds 4]
 */
import { cpuSecondsOf } from "./lib/measure.ts";
import { scriptArgs } from "./lib/args.ts";
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { startFakePdp } from "../tests/helpers/fake_pdp/mod.ts";
import { freePort, handoffArgs } from "../tests/helpers/handoff.ts";

const MIB = 1024 * 1024;

export interface HandoffBenchOptions {
  pieces: number;
  /** Seconds of each wrk window. */
  seconds: number;
}

export interface HandoffBenchResult {
  pieces: number;
  seconds: number;
  piecesPerSecond: number;
  retrievalRps: { without: number[]; during: number[] };
  uploadMiBps: { without: number[]; during: number[] };
  retrievalRatio: number;
  uploadRatio: number;
  /** The service's CPU per unit, before against during: ratios of before / during (>= 1: no dearer). */
  serverCpu: {
    /** The service's CPU time per 1 MiB piece handed off, alone (the /piece/ read, calls, records). */
    handoffMillisecondsPerPiece: number;
    retrievalMicrosecondsPerRequest: { without: number[]; during: number[] };
    uploadMillisecondsPerMiB: { without: number[]; during: number[] };
    retrievalRatio: number;
    uploadRatio: number;
  };
}

export async function benchHandoff(
  options: HandoffBenchOptions,
): Promise<HandoffBenchResult | { skipped: string }> {
  if (!wrkAvailable()) return { skipped: "wrk is not installed" };
  // Chain steps in a fifth of a second: the bench measures the service, not epochs.
  await using pdp = await startFakePdp({
    schedulerIntervalMs: 20,
    confirmAfterMs: 200,
    settleAfterMs: 200,
    provingPeriodMs: 200,
    retryDelaysMs: [200, 400],
  });
  const dataDir = await Deno.makeTempDir({ prefix: "bench-handoff-" });
  try {
    const port = freePort();
    const args = [
      ...await handoffArgs(pdp, dataDir, port),
      "--log-requests",
      "false",
      "--sponsored-daily-cap",
      "1TiB",
      "--sponsored-max-file-size",
      "1GiB",
    ];
    await using server = await spawnServer(dataDir, args);
    const pid = server.process.pid;
    pdp.holdPulls();
    const chunk = new Uint8Array(MIB);
    for (let i = 0; i < MIB; i++) chunk[i] = (i * 31 + 7) & 0xff;
    const read = await upload(server, "benchhandoffread", 64 * 1024, chunk, 0);
    for (let i = 0; i < options.pieces; i++) {
      await upload(server, `benchhandoff${i}`, MIB, chunk, i + 1);
    }
    await waitFor(server, (h) => h.digests.backlog === 0, 600_000);
    const readUrl = `${server.url}/p/${read}`;
    // The service's CPU time per unit, each window's: µs per request, ms per MiB uploaded.
    let cpuPer = { retrieval: [] as number[], upload: [] as number[] };
    const retrieval = async () => {
      const before = cpuSecondsOf(pid);
      const result = await runWrk({ url: readUrl, connections: 16, seconds: options.seconds });
      cpuPer.retrieval.push(
        (cpuSecondsOf(pid) - before) * 1e6 /
          (result.requestsPerSecond * options.seconds),
      );
      return result.requestsPerSecond;
    };
    // curl sends the 100 MiB uploads: the fake provider hashes on this process's thread, and
    // would slow an upload client that shared it.
    const bigFile = `${dataDir}/big.bin`;
    await Deno.writeFile(bigFile, new Uint8Array(100 * MIB).map((_, i) => (i * 7 + 3) & 0xff));
    let bigUploads = 0;
    const bigUpload = async () => {
      const cid = `benchhandoffbig${bigUploads++}`;
      // Other bytes for each (its first 8): each is a piece of its own at the provider too.
      using file = await Deno.open(bigFile, { write: true });
      const head = new Uint8Array(8);
      new DataView(head.buffer).setFloat64(0, bigUploads);
      await file.write(head);
      const started = performance.now();
      const cpuBefore = cpuSecondsOf(pid);
      const out = await new Deno.Command("curl", {
        args: [
          "-sS",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "-H",
          "content-type: application/octet-stream",
          "--data-binary",
          `@${bigFile}`,
          `${server.url}/api/upload?cid=${cid}`,
        ],
        stdout: "piped",
      }).output();
      const status = new TextDecoder().decode(out.stdout);
      if (status !== "200") throw new Error(`upload ${cid}: ${status}`);
      const seconds = (performance.now() - started) / 1000;
      cpuPer.upload.push((cpuSecondsOf(pid) - cpuBefore) * 1000 / 100);
      return Math.round(100 / seconds);
    };
    const without = { retrieval: [] as number[], upload: [] as number[] };
    for (let i = 0; i < 3; i++) {
      without.retrieval.push(await retrieval());
      without.upload.push(await bigUpload());
    }
    const cpuWithout = cpuPer;
    cpuPer = { retrieval: [], upload: [] };
    const eligible = options.pieces + 1 + bigUploads;
    const started = performance.now();
    pdp.releasePulls();
    const during = { retrieval: [] as number[], upload: [] as number[] };
    let allLive = false;
    const live = waitFor(server, (h) => (h.handoff?.pieces.live ?? 0) >= eligible, 900_000)
      .then(() => allLive = true);
    while (!allLive && during.retrieval.length < 20) {
      during.retrieval.push(await retrieval());
      if (!allLive) during.upload.push(await bigUpload());
    }
    await live;
    const seconds = (performance.now() - started) / 1000;
    // Then the hand-off alone, no client load: its own CPU time per piece.
    pdp.holdPulls();
    const alone = Math.max(50, Math.round(options.pieces / 5));
    for (let i = 0; i < alone; i++) {
      await upload(server, `benchhandoffalone${i}`, MIB, chunk, 2_000_000 + i);
    }
    await waitFor(server, (h) => h.digests.backlog === 0, 600_000);
    const cpuBeforeAlone = cpuSecondsOf(pid);
    pdp.releasePulls();
    await waitFor(server, (h) => (h.handoff?.pieces.live ?? 0) >= eligible + alone, 900_000);
    const cpuPerPieceMs = (cpuSecondsOf(pid) - cpuBeforeAlone) * 1000 / alone;
    return {
      pieces: eligible,
      seconds: round(seconds),
      piecesPerSecond: round(eligible / seconds),
      retrievalRps: { without: without.retrieval, during: during.retrieval },
      uploadMiBps: { without: without.upload, during: during.upload },
      retrievalRatio: round(median(during.retrieval) / median(without.retrieval)),
      serverCpu: {
        handoffMillisecondsPerPiece: round(cpuPerPieceMs),
        retrievalMicrosecondsPerRequest: {
          without: cpuWithout.retrieval.map(round),
          during: cpuPer.retrieval.map(round),
        },
        uploadMillisecondsPerMiB: {
          without: cpuWithout.upload.map(round),
          during: cpuPer.upload.map(round),
        },
        retrievalRatio: round(median(cpuWithout.retrieval) / median(cpuPer.retrieval)),
        uploadRatio: round(median(cpuWithout.upload) / median(cpuPer.upload)),
      },
      uploadRatio: during.upload.length === 0
        ? NaN
        : round(median(during.upload) / median(without.upload)),
    };
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

/** Uploads `size` bytes under an opaque cid; the first 8 bytes carry `seed` so pieces differ. */
async function upload(
  server: SpawnedServer,
  cid: string,
  size: number,
  chunk: Uint8Array,
  seed: number,
): Promise<string> {
  const first = chunk.slice();
  new DataView(first.buffer).setFloat64(0, seed);
  const result = await streamUpload({
    url: server.url,
    cid,
    size,
    chunk,
    chunkAt: (index) => index === 0 ? first : chunk,
  });
  if (result.status !== 200) throw new Error(`upload ${cid}: ${result.status} ${result.body}`);
  return cid;
}

interface HealthView {
  digests: { backlog: number };
  handoff?: { pieces: Record<string, number> };
}

async function waitFor(
  server: SpawnedServer,
  done: (health: HealthView) => boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const health = await (await fetch(`${server.url}/healthz`)).json() as HealthView;
    if (done(health)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error("timed out waiting on the service");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

if (import.meta.main) {
  const opts = scriptArgs(
    "Usage: deno run -A scripts/bench_handoff.ts [--pieces 1000] [--seconds 4]",
    {
      pieces: { type: "number", default: 1000, integer: true, min: 1 },
      seconds: { type: "number", default: 4, integer: true, min: 1 },
    },
  );
  const result = await benchHandoff({ pieces: opts.pieces, seconds: opts.seconds });
  console.log(JSON.stringify(result, null, 2));
}
