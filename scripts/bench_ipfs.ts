/**
 * Bench workloads 18 and 19: what serving IPFS costs, against the same
 * service doing the same work without it, in the same run.
 *
 *   18  a CAR upload of --gib (1 GiB) with every block checked against its cid,
 *       vs an opaque upload of the same bytes (MiB/s, goal >= 0.8x). The CAR is
 *       1 MiB raw sha2-256 blocks, as ipfs-car makes a large file's leaves.
 *   19  blocks/s from /ipfs/{cid}?format=raw of a 256 KiB block (found in the
 *       block index, read from its CAR's piece at its offset), vs /p/ of a
 *       256 KiB piece (goal >= 0.8x); wrk, 64 connections.
 *
 * The service is main.ts with the start task's permissions on a temp data
 * directory; contenders alternate which goes first. Talks only to 127.0.0.1.
 *
 *   deno run -A scripts/bench_ipfs.ts [--runs 3] [--gib 1] [--seconds 10]
 */
import { createHash } from "node:crypto";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { create as createDigest } from "multiformats/hashes/digest";
import { encode as encodeCbor } from "@ipld/dag-cbor";
import { varint } from "multiformats";
import { scriptArgs } from "./lib/args.ts";
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";

const MIB = 1024 * 1024;
const CAR_TYPE = "application/vnd.ipld.car";

export interface IpfsBenchResult {
  carUpload_MiBps?: { car: Summary; opaque: Summary; ratio: number; gib: number };
  rawBlock256KiB_rps?: { ipfs: Summary; piece: Summary; ratio: number } | { skipped: string };
}

/** A CARv1 in memory: `count` raw blocks of `blockBytes`, each different; its block cids. */
export function buildCar(count: number, blockBytes: number): { car: Uint8Array; cids: CID[] } {
  const cids: CID[] = [];
  const sections: Uint8Array[] = [];
  let total = 0;
  const block = new Uint8Array(blockBytes);
  for (let i = 0; i < blockBytes; i++) block[i] = (i * 31 + 7) & 0xff;
  for (let n = 0; n < count; n++) {
    new DataView(block.buffer).setUint32(0, n); // every block different
    const digest = createHash("sha256").update(block).digest();
    const cid = CID.createV1(raw.code, createDigest(0x12, new Uint8Array(digest)));
    cids.push(cid);
    const head = lengthPrefixed(cid.bytes, blockBytes);
    sections.push(head, block.slice());
    total += head.length + blockBytes;
  }
  const header = lengthPrefixed(encodeCbor({ version: 1, roots: [cids[0]] }), 0);
  const car = new Uint8Array(header.length + total);
  car.set(header);
  let at = header.length;
  for (const part of sections) {
    car.set(part, at);
    at += part.length;
  }
  return { car, cids };
}

function lengthPrefixed(bytes: Uint8Array, extra: number): Uint8Array {
  const total = bytes.length + extra;
  const prefix = varint.encodeTo(total, new Uint8Array(varint.encodingLength(total)));
  const out = new Uint8Array(prefix.length + bytes.length);
  out.set(prefix);
  out.set(bytes, prefix.length);
  return out;
}

const SERVICE_ARGS = [
  "--sponsored-max-file-size",
  "8GiB",
  "--sponsored-daily-cap",
  "1000GiB",
  "--max-uploads-per-client",
  "100000",
  "--log-requests",
  "false",
];

export interface IpfsBenchOptions {
  runs: number;
  gib: number;
  seconds: number;
  dir: string;
  /** Which of the two run (default both). */
  workloads?: { carUpload: boolean; blocks: boolean };
}

export async function benchIpfs(options: IpfsBenchOptions): Promise<IpfsBenchResult> {
  await using service = await spawnServer(options.dir, SERVICE_ARGS);
  const workloads = options.workloads ?? { carUpload: true, blocks: true };
  return {
    carUpload_MiBps: workloads.carUpload ? await carUpload(service.url, options) : undefined,
    rawBlock256KiB_rps: workloads.blocks ? await blockLoad(service.url, options) : undefined,
  };
}

/** 18: the same bytes, once as a CAR (checked block by block) and once as opaque bytes. */
async function carUpload(
  url: string,
  options: IpfsBenchOptions,
): Promise<IpfsBenchResult["carUpload_MiBps"]> {
  const { car } = buildCar(Math.round(options.gib * 1024), MIB);
  const carRates: number[] = [];
  const opaqueRates: number[] = [];
  for (let run = 0; run < options.runs; run++) {
    const order = run % 2 === 0 ? ["car", "opaque"] : ["opaque", "car"];
    for (const kind of order) {
      const started = performance.now();
      const answer = await streamUpload({
        url,
        cid: `bench${kind}${run}x`,
        size: car.length,
        chunk: car,
        contentType: kind === "car" ? CAR_TYPE : "application/octet-stream",
      });
      if (answer.status !== 200) throw new Error(`${kind} upload: ${answer.status} ${answer.body}`);
      const rate = car.length / MIB / ((performance.now() - started) / 1000);
      (kind === "car" ? carRates : opaqueRates).push(rate);
    }
  }
  const carSummary = summarize(carRates);
  const opaqueSummary = summarize(opaqueRates);
  return {
    car: carSummary,
    opaque: opaqueSummary,
    ratio: round(carSummary.median / opaqueSummary.median),
    gib: options.gib,
  };
}

/** 19: one 256 KiB block by /ipfs/ against one 256 KiB piece by /p/, under wrk. */
async function blockLoad(
  url: string,
  options: { runs: number; seconds: number },
): Promise<IpfsBenchResult["rawBlock256KiB_rps"]> {
  if (!wrkAvailable()) return { skipped: "wrk is not installed" };
  const { car, cids } = buildCar(16, 256 * 1024);
  const stored = await streamUpload({
    url,
    cid: "benchblocks0001",
    size: car.length,
    chunk: car,
    contentType: CAR_TYPE,
  });
  if (stored.status !== 200) throw new Error(`CAR upload: ${stored.body}`);
  const piece = await streamUpload({
    url,
    cid: "benchpiece256k",
    size: 256 * 1024,
    chunk: car.subarray(car.length - 256 * 1024),
  });
  if (piece.status !== 200) throw new Error(`piece upload: ${piece.body}`);
  const contenders = {
    ipfs: `${url}/ipfs/${cids[7]}?format=raw`,
    piece: `${url}/p/benchpiece256k`,
  };
  const series: Record<string, number[]> = { ipfs: [], piece: [] };
  for (let run = 0; run < options.runs; run++) {
    const names = run % 2 === 0 ? ["ipfs", "piece"] : ["piece", "ipfs"];
    for (const name of names) {
      const r = await runWrk({
        url: contenders[name as keyof typeof contenders],
        connections: 64,
        seconds: options.seconds,
      });
      if (r.non2xx + r.socketErrors > 0) {
        throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.socketErrors} socket errors`);
      }
      series[name].push(r.requestsPerSecond);
    }
  }
  const ipfs = summarize(series.ipfs);
  const pieceSummary = summarize(series.piece);
  return { ipfs, piece: pieceSummary, ratio: round(ipfs.median / pieceSummary.median) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

if (import.meta.main) {
  const opts = scriptArgs("Usage: bench_ipfs.ts [--runs 3] [--gib 1] [--seconds 10]", {
    runs: { type: "number", integer: true, min: 1 },
    gib: { type: "number", min: 0.01 },
    seconds: { type: "number", integer: true, min: 1 },
  });
  const dir = await Deno.makeTempDir({ prefix: "bench-ipfs-" });
  try {
    const result = await benchIpfs({
      runs: opts.runs ?? 3,
      gib: opts.gib ?? 1,
      seconds: opts.seconds ?? 10,
      dir,
    });
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
