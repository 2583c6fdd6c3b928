/**
 * What the bench's workloads measure with (scripts/bench.ts and the workload
 * modules beside it): timing, downloading, sampling a process's RSS, the
 * rotation of contenders, waiting out a server's deferred hashing, the
 * PieceCIDv2 of repeated bytes, and a process's CPU time.
 */
import { rssBytes } from "./spawn_server.ts";
import type { SpawnedServer } from "./spawn_server.ts";
import { PieceHasher } from "../../src/kernel/piece_cid/hasher.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/cid_codec.ts";

const MIB = 1024 * 1024;

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

/** GETs url to the end and returns the bytes received; a status other than `status` throws. */
export async function download(
  url: string,
  init: RequestInit = {},
  status = 200,
): Promise<number> {
  const response = await fetch(url, init);
  let bytes = 0;
  for await (const chunk of response.body!) bytes += chunk.byteLength;
  if (response.status !== status) throw new Error(`GET ${url}: ${response.status}`);
  return bytes;
}

/** Samples a process's RSS every 50 ms until stopped; returns the peak in MiB. */
export function sampleRss(pid: number): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, (await rssBytes(pid)) ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return Math.round((peak / MIB) * 10) / 10;
    },
  };
}

/** The PieceCIDv2 of `chunk` repeated `count` times. */
export function cidOf(chunk: Uint8Array, count: number): string {
  const hasher = new PieceHasher();
  for (let i = 0; i < count; i++) hasher.update(chunk);
  const d = hasher.digest();
  return pieceCidV2(d.root, d.height, d.padding);
}

/**
 * The contenders in a different order each run (A B C, B C A, C A B, …), so that
 * going first or last in a run, right after another contender's burst, favours
 * nobody.
 */
export function rotated<T>(list: readonly T[], run: number): T[] {
  const shift = run % list.length;
  return [...list.slice(shift), ...list.slice(0, shift)];
}

/**
 * The service acknowledges a first upload before hashing it (SHA-256 runs right
 * after, in the background). Wait for that outside the timed part, so the next
 * contender never runs beside our leftover work.
 */
export async function settle(service: SpawnedServer, seconds = 6): Promise<void> {
  for (let i = 0; i < seconds * 100; i++) {
    const health = await (await fetch(`${service.url}/healthz`)).json();
    if (health.digests.backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the service did not finish hashing within ${seconds} s`);
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (USER_HZ 100). */
export function cpuSecondsOf(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
