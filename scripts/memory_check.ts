/**
 * Memory stays flat: spawns the real server (the start task's flags), streams
 * a large piece in and back out, and samples the server's RSS from /proc
 * throughout. Fails (exit 1) if RSS grows by more than the allowed amount
 * over its warmed-up baseline, or if the bytes do not come back identical.
 *
 *   deno run -A scripts/memory_check.ts [--size-mib 1024] [--max-growth-mib 50] [--json FILE]
 *
 * Talks only to 127.0.0.1, and stops the server it started, by PID.
 */
import { createHash } from "node:crypto";
import { rssBytes, spawnServer, streamUpload } from "./lib/spawn_server.ts";
import { scriptArgs } from "./lib/args.ts";

const MIB = 1024 * 1024;

export interface MemoryReport {
  sizeMiB: number;
  baselineRssMiB: number;
  peakRssMiB: number;
  growthMiB: number;
  uploadMiBps: number;
  downloadMiBps: number;
  identical: boolean;
}

export async function runMemoryCheck(sizeMiB: number): Promise<MemoryReport> {
  const dataDir = await Deno.makeTempDir({ prefix: "storage-memcheck-" });
  const size = sizeMiB * MIB;
  try {
    await using server = await spawnServer(dataDir, [
      "--sponsored-max-file-size",
      `${sizeMiB * 2}MiB`,
      "--sponsored-daily-cap",
      `${sizeMiB * 4}MiB`,
      "--log-requests",
      "false",
    ]);
    const pid = server.process.pid;
    // Warm up the paths once, so the baseline includes compiled code and buffers.
    const chunk = new Uint8Array(MIB);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31 + 7) & 0xff;
    await streamUpload({ url: server.url, cid: "memwarmup0001", size: 4 * MIB, chunk });
    await (await fetch(`${server.url}/p/memwarmup0001`)).arrayBuffer();
    // The warm-up piece's background pass (its SHA-256 and PieceCIDv2, on a hashing worker)
    // belongs to a warmed-up server too: its worker is a fixed cost, not growth.
    await digestsSettled(server.url);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const baseline = (await rssBytes(pid)) ?? 0;

    let peak = baseline;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rss = await rssBytes(pid);
        if (rss !== null && rss > peak) peak = rss;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    const expected = createHash("sha256");
    for (let sent = 0; sent < size; sent += chunk.length) expected.update(chunk);

    const uploadStart = performance.now();
    const upload = await streamUpload({ url: server.url, cid: "memcheckpiece01", size, chunk });
    const uploadSeconds = (performance.now() - uploadStart) / 1000;
    if (upload.status !== 200) throw new Error(`upload failed: ${upload.status} ${upload.body}`);

    const downloadStart = performance.now();
    const response = await fetch(`${server.url}/p/memcheckpiece01`);
    const actual = createHash("sha256");
    let received = 0;
    for await (const part of response.body!) {
      actual.update(part);
      received += part.length;
    }
    const downloadSeconds = (performance.now() - downloadStart) / 1000;
    sampling = false;
    await sampler;

    return {
      sizeMiB,
      baselineRssMiB: round(baseline / MIB),
      peakRssMiB: round(peak / MIB),
      growthMiB: round((peak - baseline) / MIB),
      uploadMiBps: round(sizeMiB / uploadSeconds),
      downloadMiBps: round(sizeMiB / downloadSeconds),
      identical: received === size && actual.digest("hex") === expected.digest("hex"),
    };
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

if (import.meta.main) {
  const opts = scriptArgs(
    "Usage: deno run -A scripts/memory_check.ts [--size-mib 1024] [--max-growth-mib 50] [--json FILE]",
    {
      "size-mib": { type: "number", default: 1024, integer: true, min: 1 },
      "max-growth-mib": { type: "number", default: 50, min: 0 },
      json: { type: "string", default: "" },
    },
  );
  const sizeMiB = opts["size-mib"];
  const maxGrowthMiB = opts["max-growth-mib"];
  const report = await runMemoryCheck(sizeMiB);
  console.log(
    `memory: ${report.sizeMiB} MiB piece in and out; RSS ${report.baselineRssMiB} -> ` +
      `${report.peakRssMiB} MiB (growth ${report.growthMiB} MiB, allowed ${maxGrowthMiB}); ` +
      `upload ${report.uploadMiBps} MiB/s, download ${report.downloadMiBps} MiB/s; ` +
      `identical: ${report.identical}`,
  );
  const jsonPath = opts.json;
  if (jsonPath) await Deno.writeTextFile(jsonPath, JSON.stringify(report, null, 2) + "\n");
  if (!report.identical || report.growthMiB > maxGrowthMiB) Deno.exit(1);
}

/** Waits (at most 60 s) until /healthz reports no piece waiting for its background digests. */
async function digestsSettled(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const health = await (await fetch(`${url}/healthz`)).json();
    if (health.digests?.backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the warm-up piece's background digests did not finish within 60 s");
}
