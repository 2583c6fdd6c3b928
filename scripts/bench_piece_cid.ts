/**
 * PieceCIDv2 of 100 MiB in memory, in the same run: our WebAssembly SIMD
 * kernel on one core, the same over the Worker pool (every core), and the
 * Rust/WASM reference package (fr32-sha2-256-trunc254-padded-binary-tree-
 * multihash) on the first 25 MiB of the same bytes. Alternates the contenders
 * (A B C A B C …) so machine noise hits them alike. Also runnable alone:
 *
 *   deno run -A scripts/bench_piece_cid.ts [--runs 3]
 */
import * as RustHasher from "fr32-sha2-256-trunc254-padded-binary-tree-multihash";
import { PieceHasher } from "../src/kernel/piece_cid/hasher.ts";
import { ParallelPieceHasher } from "../src/kernel/piece_cid/parallel.ts";
import { HashWorkerPool } from "../src/kernel/piece_cid/pool.ts";
import { scriptArgs } from "./lib/args.ts";

const MIB = 1024 * 1024;

export interface Summary {
  median: number;
  min: number;
  max: number;
}

export function summarize(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const round = (n: number) => Math.round(n * 10) / 10;
  return { median: round(median), min: round(sorted[0]), max: round(sorted[sorted.length - 1]) };
}

/** MB/s (10^6 bytes per second) of fn over `bytes`. */
async function rate(bytes: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return bytes / 1e6 / ((performance.now() - start) / 1000);
}

export async function benchPieceCid(runs: number) {
  const payload = new Uint8Array(100 * MIB);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + 7) & 0xff;
  const pool = new HashWorkerPool();
  const results = { oneCore: [] as number[], pool: [] as number[], rustWasm: [] as number[] };
  try {
    for (let run = 0; run < runs; run++) {
      results.oneCore.push(
        await rate(payload.length, () => {
          const hasher = new PieceHasher();
          hasher.update(payload);
          return hasher.digest();
        }),
      );
      results.pool.push(
        await rate(payload.length, async () => {
          const hasher = new ParallelPieceHasher({ pool });
          for (let i = 0; i < payload.length; i += MIB) {
            const wait = hasher.update(payload.subarray(i, i + MIB));
            if (wait) await wait;
          }
          return await hasher.digest();
        }),
      );
      // The reference runs at 10-20 MB/s, so it hashes the first quarter only: a piece
      // tree costs the same per byte at any size, and this keeps the bench under 5 minutes.
      const referencePayload = payload.subarray(0, payload.length / 4);
      results.rustWasm.push(
        await rate(referencePayload.length, () => {
          const hasher = RustHasher.create();
          hasher.write(referencePayload);
          const out = new Uint8Array(64);
          hasher.digestInto(out, 0, true);
          hasher.free?.();
        }),
      );
    }
  } finally {
    pool.close();
  }
  const oneCore = summarize(results.oneCore);
  const parallel = summarize(results.pool);
  const rustWasm = summarize(results.rustWasm);
  return {
    payloadMiB: 100,
    referencePayloadMiB: 25,
    units: "MB/s (10^6 bytes/s)",
    workers: pool.size,
    oneCore,
    parallel,
    rustWasmReference: rustWasm,
    oneCoreVsReference: Math.round((oneCore.median / rustWasm.median) * 10) / 10,
    parallelVsReference: Math.round((parallel.median / rustWasm.median) * 10) / 10,
  };
}

if (import.meta.main) {
  // The run count used to be the only argument (`bench_piece_cid.ts 5`); that still works.
  const args = Deno.args.length === 1 && !Deno.args[0].startsWith("-")
    ? ["--runs", Deno.args[0]]
    : Deno.args;
  const { runs } = scriptArgs(
    "Usage: deno run -A scripts/bench_piece_cid.ts [--runs 3]",
    { runs: { type: "number", default: 3, integer: true, min: 1 } },
    args,
  );
  console.log(await benchPieceCid(runs));
}
