/**
 * Bench workloads 13, 14 and 15: big files as one file, and ranges.
 *
 *   13. GET /f/ of a split file (pieces of 100 MiB) against GET /p/ of the same
 *       bytes stored as one piece: MB/s, median of --runs, the two alternating
 *       which goes first. Goal: /f/ at 0.9x or more. On the disk store and on S3.
 *   14. 1,000 GETs of a random 64 KiB range of a 100 MiB piece against 1,000 GETs
 *       of whole 64 KiB pieces (100 of them, in turn), 8 in flight: requests/s.
 *       Goal: ranges at 0.8x or more. With the small-piece cache off, so both
 *       read the store (the whole ones would otherwise come from memory), on the
 *       disk store and on S3; the cached whole GETs are reported for context.
 *   15. The service's peak RSS while one GET /f/ streams a 5 GiB split file: 50
 *       pieces of 100 MiB (the same piece listed 50 times: memory is what is
 *       measured, and the bench stores 100 MiB instead of 5 GiB).
 *
 * Each workload starts its own service(s) (main.ts with the start task's
 * permissions) on temp directories, and a bucket on S3 (scripts/bench_s3.ts:
 * STORAGE_TEST_S3_ENDPOINT's, else a radosgw of its own), and stops them.
 */
import { createHash } from "node:crypto";
import { AwsClient } from "aws4fetch";
import { rssBytes, spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { cidOf, download, rotated, sampleRss, timed } from "./lib/measure.ts";
import { seededRandom } from "./lib/random.ts";
import { s3ForBench } from "./bench_s3.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { pieceCid } from "../src/client/sdk/piece_cid.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../src/kernel/manifest_format.ts";

const MIB = 1024 * 1024;
const PIECE = 100 * MIB;
const CHUNKS_PER_PIECE = PIECE / MIB;
const RANGE = 64 * 1024;

/** Caps out of the way: a 1 GiB piece and the days' uploads of a bench. */
const ARGS = ["--sponsored-max-file-size", "8GiB", "--sponsored-daily-cap", "1000GiB"];

export type StoreName = "disk" | "s3";

/** A service on each store, one after the other; S3 is left out (with why) when none runs. */
export async function onEachStore<T>(
  extraArgs: string[],
  run: (service: SpawnedServer, store: StoreName) => Promise<T>,
): Promise<{ disk: T; s3: T | { skipped: string } }> {
  const disk = await withService(extraArgs, null, (service) => run(service, "disk"));
  const s3 = await s3ForBench();
  if ("skipped" in s3) return { disk, s3 };
  try {
    const raw = new AwsClient({ ...s3.access, service: "s3", retries: 0 });
    const bucket = `bench-ranges-${crypto.randomUUID()}`;
    await expectOk(await raw.fetch(`${s3.access.endpoint}/${bucket}`, { method: "PUT" }));
    try {
      const flags = [
        ...["--store", "s3", "--s3-endpoint", s3.access.endpoint, "--s3-bucket", bucket],
        ...["--s3-region", s3.access.region],
      ];
      const env = {
        STORAGE_S3_ACCESS_KEY_ID: s3.access.accessKeyId,
        STORAGE_S3_SECRET_ACCESS_KEY: s3.access.secretAccessKey,
      };
      return {
        disk,
        s3: await withService([...flags, ...extraArgs], env, (service) => run(service, "s3")),
      };
    } finally {
      await emptyAndRemove(raw, `${s3.access.endpoint}/${bucket}`);
    }
  } finally {
    await s3.cluster?.stop();
  }
}

async function withService<T>(
  extraArgs: string[],
  env: Record<string, string> | null,
  run: (service: SpawnedServer) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "bench-ranges-" });
  try {
    await using service = await spawnServer(dir, [...ARGS, ...extraArgs], { env: env ?? {} });
    return await run(service);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The 1 MiB chunk piece k is made of: distinct per piece, so each piece has its own cid. */
function chunkOf(k: number): Uint8Array {
  const chunk = new Uint8Array(MIB);
  for (let i = 0; i < MIB; i++) chunk[i] = (i * 31 + 7 + k * 101) & 0xff;
  chunk[0] = k & 0xff;
  chunk[1] = k >> 8;
  return chunk;
}

/** Piece k (100 MiB of chunkOf(k)) under its PieceCIDv2. */
async function storePiece(service: SpawnedServer, k: number): Promise<string> {
  const chunk = chunkOf(k);
  const cid = cidOf(chunk, CHUNKS_PER_PIECE);
  const stored = await streamUpload({ url: service.url, cid, size: PIECE, chunk });
  if (stored.status !== 200) throw new Error(`piece ${k}: ${stored.body}`);
  return cid;
}

/** A manifest of these pieces (sizes pieceBytes, PIECE unless told), stored; returns its cid. */
export async function storeManifest(
  service: SpawnedServer,
  pieces: string[],
  sha256: string,
  pieceBytes = PIECE,
): Promise<string> {
  const bytes = serializeManifest({
    format: "storage-manifest",
    version: 1,
    name: "bench.bin",
    contentType: "application/octet-stream",
    size: pieces.length * pieceBytes,
    sha256,
    pieces: pieces.map((cid) => ({ cid, size: pieceBytes })),
  });
  const { cid } = await pieceCid(bytes, { pool: null });
  const response = await fetch(`${service.url}/api/upload?cid=${cid}`, {
    method: "POST",
    headers: { "content-type": MANIFEST_CONTENT_TYPE },
    body: bytes,
  });
  if (response.status !== 200) throw new Error(`manifest: ${await response.text()}`);
  await response.body?.cancel();
  return cid;
}

export interface SplitFileResult {
  fileGiB: number;
  pieces: number;
  fileMBps: Summary;
  wholeMBps: Summary;
  ratio: number;
}

/** Workload 13 on one service: /f/ of `pieceCount` pieces vs /p/ of the same bytes whole. */
export async function splitFileVsWhole(
  service: SpawnedServer,
  options: { pieceCount: number; runs: number },
): Promise<SplitFileResult> {
  const { pieceCount } = options;
  const size = pieceCount * PIECE;
  const pieces: string[] = [];
  const sha = createHash("sha256");
  for (let k = 0; k < pieceCount; k++) {
    pieces.push(await storePiece(service, k));
    const chunk = chunkOf(k);
    for (let i = 0; i < CHUNKS_PER_PIECE; i++) sha.update(chunk);
  }
  const file = await storeManifest(service, pieces, sha.digest("hex"));
  const whole = `benchwhole${pieceCount}x`;
  const stored = await streamUpload({
    url: service.url,
    cid: whole,
    size,
    chunk: chunkOf(0),
    chunkAt: (index) => chunkOf(Math.floor(index / CHUNKS_PER_PIECE)),
  });
  if (stored.status !== 200) throw new Error(`whole: ${stored.body}`);
  const contenders = [
    { name: "file", url: `${service.url}/f/${file}` },
    { name: "whole", url: `${service.url}/p/${whole}` },
  ];
  const rates: Record<string, number[]> = { file: [], whole: [] };
  // One read of each first: both from the page cache (or S3's memory) alike after it.
  for (const { url } of contenders) await download(url);
  for (let run = 0; run < options.runs; run++) {
    for (const { name, url } of rotated(contenders, run)) {
      let bytes = 0;
      const seconds = await timed(async () => bytes = await download(url));
      if (bytes !== size) throw new Error(`${name}: ${bytes} bytes, not ${size}`);
      rates[name].push(size / 1e6 / seconds);
    }
  }
  const fileMBps = summarize(rates.file);
  const wholeMBps = summarize(rates.whole);
  return {
    fileGiB: size / 1024 / MIB,
    pieces: pieceCount,
    fileMBps,
    wholeMBps,
    ratio: Math.round((fileMBps.median / wholeMBps.median) * 100) / 100,
  };
}

export interface RangesResult {
  requests: number;
  inFlight: number;
  rangesPerSecond: Summary;
  wholePerSecond: Summary;
  ratio: number;
}

/** Workload 14 on one service: random 64 KiB ranges of a 100 MiB piece vs whole 64 KiB GETs. */
export async function rangesVsWhole(
  service: SpawnedServer,
  options: { requests: number; runs: number; inFlight?: number },
): Promise<RangesResult> {
  const inFlight = options.inFlight ?? 8;
  const big = await storePiece(service, 7);
  const small: string[] = [];
  for (let i = 0; i < 100; i++) {
    const cid = `benchsmall${String(i).padStart(3, "0")}`;
    const chunk = chunkOf(1000 + i).subarray(0, RANGE);
    const stored = await streamUpload({ url: service.url, cid, size: RANGE, chunk });
    if (stored.status !== 200) throw new Error(`small ${i}: ${stored.body}`);
    small.push(cid);
  }
  const random = seededRandom(14);
  const offsets = Array.from(
    { length: options.requests },
    () => Math.floor(random() * (PIECE - RANGE)),
  );
  const contenders = [
    {
      name: "ranges",
      get: (i: number) =>
        download(`${service.url}/p/${big}`, {
          headers: { range: `bytes=${offsets[i]}-${offsets[i] + RANGE - 1}` },
        }, 206),
    },
    { name: "whole", get: (i: number) => download(`${service.url}/p/${small[i % small.length]}`) },
  ];
  const rates: Record<string, number[]> = { ranges: [], whole: [] };
  for (let run = 0; run < options.runs; run++) {
    for (const { name, get } of rotated(contenders, run)) {
      const seconds = await timed(() => inParallel(options.requests, inFlight, get));
      rates[name].push(options.requests / seconds);
    }
  }
  const rangesPerSecond = summarize(rates.ranges);
  const wholePerSecond = summarize(rates.whole);
  return {
    requests: options.requests,
    inFlight,
    rangesPerSecond,
    wholePerSecond,
    ratio: Math.round((rangesPerSecond.median / wholePerSecond.median) * 100) / 100,
  };
}

/** Runs get(0 … count-1), `inFlight` at a time; each must answer 64 KiB. */
async function inParallel(
  count: number,
  inFlight: number,
  get: (i: number) => Promise<number>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < count) {
      const bytes = await get(next++);
      if (bytes !== RANGE) throw new Error(`answered ${bytes} bytes, not ${RANGE}`);
    }
  }));
}

export interface SplitFileMemory {
  fileGiB: number;
  rssBeforeMiB: number;
  peakRssMiB: number;
  MBps: number;
}

/** Workload 15: one GET /f/ of a 5 GiB split file, the service's RSS sampled throughout. */
export async function splitFileMemory(service: SpawnedServer): Promise<SplitFileMemory> {
  const piece = await storePiece(service, 3);
  const count = 50;
  const file = await storeManifest(service, Array(count).fill(piece), "0".repeat(64));
  const before = Math.round(((await rssBytes(service.process.pid)) ?? 0) / MIB * 10) / 10;
  const sampler = sampleRss(service.process.pid);
  let bytes = 0;
  const seconds = await timed(async () => bytes = await download(`${service.url}/f/${file}`));
  const peak = await sampler.stop();
  if (bytes !== count * PIECE) throw new Error(`/f/ gave ${bytes} bytes`);
  return {
    fileGiB: (count * PIECE) / 1024 / MIB,
    rssBeforeMiB: before,
    peakRssMiB: peak,
    MBps: Math.round(bytes / 1e6 / seconds),
  };
}

async function expectOk(response: Response): Promise<void> {
  const text = await response.text();
  if (!response.ok) throw new Error(`S3 answered ${response.status}: ${text}`);
}

/** Deletes every object of the bench's bucket, then the bucket. */
async function emptyAndRemove(raw: AwsClient, bucket: string): Promise<void> {
  for (;;) {
    const listing = await (await raw.fetch(`${bucket}?list-type=2&max-keys=1000`)).text();
    const keys = [...listing.matchAll(/<Key>([^<]+)<\/Key>/g)].map(([, key]) => key);
    if (keys.length === 0) break;
    for (const key of keys) {
      await (await raw.fetch(`${bucket}/${key}`, { method: "DELETE" })).body?.cancel();
    }
  }
  await (await raw.fetch(bucket, { method: "DELETE" })).body?.cancel();
}
