/**
 * deno task bench — throughput and memory of the real service, started with
 * the start task's permission flags on a temp data dir. Prints a table and
 * writes bench-results/latest.json. Talks only to 127.0.0.1 and stops what
 * it started.
 *
 * Figures (medians of --runs runs):
 *   upload 100 MiB (sponsored, opaque cid)   MiB/s
 *   retrieve 100 MiB                          MiB/s
 *   retrieve 1 KiB, 64 concurrent fetches     req/s for --seconds
 *   1 GiB in and out                          RSS growth (memory_check.ts)
 */
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import { runMemoryCheck } from "./memory_check.ts";
import { benchPieceCid, summarize } from "./bench_piece_cid.ts";
import { PieceHasher } from "../src/piece_cid/hasher.ts";
import { pieceCidV2 } from "../src/piece_cid/cid.ts";

const MIB = 1024 * 1024;

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(name);
  return i === -1 ? fallback : Deno.args[i + 1];
}

const runs = Number(flag("--runs", "3"));
const loadSeconds = Number(flag("--seconds", "5"));
const memoryMiB = Number(flag("--memory-mib", "1024"));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const summary = summarize;

async function loadSmallRetrievals(url: string, seconds: number, connections: number) {
  const deadline = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < deadline) {
      const start = performance.now();
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status !== 200) errors++;
      latencies.push(performance.now() - start);
    }
  }));
  latencies.sort((a, b) => a - b);
  return {
    requestsPerSecond: latencies.length / seconds,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    errors,
  };
}

const dataDir = await Deno.makeTempDir({ prefix: "storage-bench-" });
const results: Record<string, unknown> = { date: new Date().toISOString(), runs };
try {
  await using server = await spawnServer(dataDir, [
    "--sponsored-daily-cap",
    "100GiB",
    "--log-requests",
    "false",
  ]);
  const chunk = new Uint8Array(MIB);
  crypto.getRandomValues(chunk.subarray(0, 65536));
  const uploads: number[] = [];
  const verifiedUploads: number[] = [];
  const downloads: number[] = [];
  for (let run = 0; run < runs; run++) {
    // A: opaque cid (stored as given). B: PieceCIDv2 (verified while streaming).
    // Each run's payload differs (its first byte), so neither is a dedupe.
    chunk[0] = run;
    const cid = `benchupload${run}x`;
    const start = performance.now();
    const upload = await streamUpload({ url: server.url, cid, size: 100 * MIB, chunk });
    if (upload.status !== 200) throw new Error(`upload failed: ${upload.body}`);
    uploads.push(100 / ((performance.now() - start) / 1000));

    chunk[0] = 100 + run;
    const hasher = new PieceHasher();
    for (let i = 0; i < 100; i++) hasher.update(chunk);
    const d = hasher.digest();
    const verifiedCid = pieceCidV2(d.root, d.height, d.padding);
    const verifiedStart = performance.now();
    const verified = await streamUpload({
      url: server.url,
      cid: verifiedCid,
      size: 100 * MIB,
      chunk,
    });
    if (verified.status !== 200) throw new Error(`verified upload failed: ${verified.body}`);
    verifiedUploads.push(100 / ((performance.now() - verifiedStart) / 1000));

    const getStart = performance.now();
    const response = await fetch(`${server.url}/p/${cid}`);
    for await (const _ of response.body!) { /* discard */ }
    downloads.push(100 / ((performance.now() - getStart) / 1000));
  }
  results.upload100MiB_MiBps = summary(uploads);
  results.uploadVerifiedPieceCidV2_100MiB_MiBps = summary(verifiedUploads);
  results.verifiedVsUnverified = Math.round(median(verifiedUploads) / median(uploads) * 100) / 100;
  results.retrieve100MiB_MiBps = summary(downloads);

  await streamUpload({ url: server.url, cid: "benchsmall01", size: 1024, chunk });
  const small = await loadSmallRetrievals(`${server.url}/p/benchsmall01`, loadSeconds, 64);
  results.retrieve1KiB = {
    connections: 64,
    seconds: loadSeconds,
    client: "Deno fetch (in-process load generator)",
    requestsPerSecond: Math.round(small.requestsPerSecond),
    p99Ms: Math.round(small.p99Ms * 10) / 10,
    errors: small.errors,
  };
} finally {
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
results.pieceCid100MiB = await benchPieceCid(runs);
results.memory = await runMemoryCheck(memoryMiB);

console.table({
  "upload 100 MiB, opaque cid (MiB/s)": results.upload100MiB_MiBps,
  "upload 100 MiB, PieceCIDv2 verified (MiB/s)": results.uploadVerifiedPieceCidV2_100MiB_MiBps,
  "retrieve 100 MiB (MiB/s)": results.retrieve100MiB_MiBps,
});
console.log("verified / unverified upload:", results.verifiedVsUnverified);
console.log("PieceCIDv2 of 100 MiB in memory:", results.pieceCid100MiB);
console.log("retrieve 1 KiB under load:", results.retrieve1KiB);
console.log("memory:", results.memory);
await Deno.mkdir("bench-results", { recursive: true });
await Deno.writeTextFile("bench-results/latest.json", JSON.stringify(results, null, 2) + "\n");
console.log("wrote bench-results/latest.json");
