/**
 * Bench workload 21: resumable uploads. On the disk store and on S3 (a local
 * radosgw), with main.ts as its own process (the start task's permissions):
 *
 *   - one 1 GiB upload through /api/tus in 8 MiB PATCHes (what tus-js-client
 *     and Uppy send with chunkSize 8 MiB), against one POST /api/upload of the
 *     same size, both under a PieceCIDv2 the server verifies. Goal: tus at
 *     least 0.85 of the plain upload's rate. Runs alternate which goes first.
 *   - a 1 GiB upload whose connection drops at half (the socket closed in the
 *     middle of one long PATCH), then resumed: HEAD for the offset and one
 *     PATCH of the rest. Reported: the bytes the resume sent against what the
 *     server lacked (goal: only the missing half), and the resume's time
 *     against a whole upload's.
 *
 * Each upload's bytes are a 1 MiB block repeated, a new block per upload so
 * every cid is new (an upload of stored bytes would only compare digests).
 * The cids are computed here first, which takes a few seconds per GiB.
 *
 *   deno run -A scripts/bench_tus.ts [--runs 3] [--gib 1]
 */
import { scriptArgs } from "./lib/args.ts";
import { streamUpload } from "./lib/spawn_server.ts";
import { cidOf, rotated } from "./lib/measure.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { onEachStore } from "./bench_ranges.ts";
import { seededRandom } from "./lib/random.ts";

const MIB = 1024 * 1024;
const PATCH_BYTES = 8 * MIB;
const TUS = { "tus-resumable": "1.0.0" };

export interface TusBenchOptions {
  runs: number;
  /** Upload size in GiB (default 1). */
  gib?: number;
}

export interface TusStoreResult {
  tusMBps: Summary;
  uploadMBps: Summary;
  /** tus median / upload median. */
  ratio: number;
  resume: {
    /** Where the server stood after the drop, as a share of the file. */
    offsetShare: number;
    /** Bytes the resume sent / bytes the server lacked (1: only the missing part). */
    sentShare: number;
    /** The resume's seconds (HEAD and the rest) / a whole tus upload's seconds. */
    timeShare: number;
  };
}

/** One upload's bytes: a 1 MiB block of its own, repeated, and their PieceCIDv2. */
interface Payload {
  block: Uint8Array<ArrayBuffer>;
  size: number;
  cid: string;
}

function payload(size: number, seed: number): Payload {
  const random = seededRandom(seed);
  const block = new Uint8Array(MIB);
  for (let i = 0; i < block.length; i++) block[i] = Math.floor(random() * 256);
  return { block, size, cid: cidOf(block, size / MIB) };
}

/** Bytes [from, from + length) of the payload: its block, repeated from where `from` falls in it. */
function payloadBytes(p: Payload, from: number, length: number): Uint8Array<ArrayBuffer> {
  const body = new Uint8Array(length);
  for (let at = 0; at < length;) {
    const phase = (from + at) % MIB;
    const take = Math.min(MIB - phase, length - at);
    body.set(p.block.subarray(phase, phase + take), at);
    at += take;
  }
  return body;
}

async function createUpload(url: string, p: Payload): Promise<string> {
  const metadata = `cid ${btoa(p.cid)},filetype ${btoa("application/octet-stream")}`;
  const answer = await fetch(`${url}/api/tus`, {
    method: "POST",
    headers: { ...TUS, "upload-length": String(p.size), "upload-metadata": metadata },
  });
  await answer.body?.cancel();
  if (answer.status !== 201) throw new Error(`tus creation answered ${answer.status}`);
  return answer.headers.get("location")!;
}

/** PATCHes of 8 MiB from `offset` to the end, one after another; the bytes they carried. */
async function patchFrom(location: string, p: Payload, offset: number): Promise<number> {
  // Every 8 MiB PATCH from this offset starts at the same place in the block: one body serves all.
  const full = payloadBytes(p, offset, PATCH_BYTES);
  let sent = 0;
  while (offset < p.size) {
    const length = Math.min(PATCH_BYTES, p.size - offset);
    const answer = await fetch(location, {
      method: "PATCH",
      headers: {
        ...TUS,
        "content-type": "application/offset+octet-stream",
        "upload-offset": String(offset),
      },
      body: length === PATCH_BYTES ? full : full.subarray(0, length),
    });
    const text = await answer.text();
    if (answer.status !== 204) throw new Error(`PATCH at ${offset}: ${answer.status} ${text}`);
    sent += length;
    offset = Number(answer.headers.get("upload-offset"));
  }
  return sent;
}

async function offsetOf(location: string): Promise<number> {
  const answer = await fetch(location, { method: "HEAD", headers: TUS });
  await answer.body?.cancel();
  return Number(answer.headers.get("upload-offset"));
}

/** One long PATCH from 0 over a raw socket, closed once `cutAt` bytes are written. */
async function droppedPatch(location: string, p: Payload, cutAt: number): Promise<void> {
  const url = new URL(location);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const head = `PATCH ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nTus-Resumable: 1.0.0\r\n` +
      `Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\n` +
      `Content-Length: ${p.size}\r\n\r\n`;
    await writeAll(conn, new TextEncoder().encode(head));
    for (let sent = 0; sent < cutAt;) {
      const piece = p.block.subarray(0, Math.min(MIB, cutAt - sent));
      await writeAll(conn, piece);
      sent += piece.length;
    }
  } finally {
    conn.close();
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

/** The contest on one server: tus vs a plain upload, then the drop and resume. */
async function benchServer(
  url: string,
  payloads: () => Payload,
  options: { runs: number },
): Promise<TusStoreResult> {
  const rates: Record<"tus" | "upload", number[]> = { tus: [], upload: [] };
  const wholeTusSeconds: number[] = [];
  const contenders = {
    tus: async (p: Payload) => {
      const started = performance.now();
      await patchFrom(await createUpload(url, p), p, 0);
      const seconds = (performance.now() - started) / 1000;
      wholeTusSeconds.push(seconds);
      return seconds;
    },
    upload: async (p: Payload) => {
      const started = performance.now();
      const answer = await streamUpload({ url, cid: p.cid, size: p.size, chunk: p.block });
      if (answer.status !== 200) throw new Error(`upload: ${answer.status} ${answer.body}`);
      return (performance.now() - started) / 1000;
    },
  };
  for (let run = 0; run < options.runs; run++) {
    for (const name of rotated(["tus", "upload"] as const, run)) {
      const p = payloads();
      const seconds = await contenders[name](p);
      rates[name].push(p.size / 1e6 / seconds);
    }
  }
  const p = payloads();
  const location = await createUpload(url, p);
  await droppedPatch(location, p, p.size / 2);
  const started = performance.now();
  const offset = await offsetOf(location);
  const resent = await patchFrom(location, p, offset);
  const resumeSeconds = (performance.now() - started) / 1000;
  const stored = await fetch(`${url}/p/${p.cid}`, { method: "HEAD" });
  await stored.body?.cancel();
  if (stored.status !== 200) throw new Error(`the resumed upload is not stored: ${stored.status}`);
  const tusMBps = summarize(rates.tus);
  const uploadMBps = summarize(rates.upload);
  const wholeSeconds = summarize(wholeTusSeconds).median;
  return {
    tusMBps,
    uploadMBps,
    ratio: Math.round(tusMBps.median / uploadMBps.median * 100) / 100,
    resume: {
      offsetShare: Math.round(offset / p.size * 1000) / 1000,
      sentShare: Math.round(resent / (p.size - offset) * 1000) / 1000,
      timeShare: Math.round(resumeSeconds / wholeSeconds * 100) / 100,
    },
  };
}

/** Runs workload 21 on the disk store and on S3 (which says why when it cannot run). */
export async function benchTus(
  options: TusBenchOptions,
): Promise<Record<"disk" | "s3", TusStoreResult | { skipped: string }>> {
  // Whole MiB: each upload's bytes are its 1 MiB block repeated.
  const size = Math.max(1, Math.round((options.gib ?? 1) * 1024)) * MIB;
  let seed = 1600;
  const payloads = () => payload(size, ++seed);
  return await onEachStore([], (service) => benchServer(service.url, payloads, options));
}

if (import.meta.main) {
  const opts = scriptArgs("Usage: deno run -A scripts/bench_tus.ts [--runs 3] [--gib 1]", {
    runs: { type: "number", default: 3, integer: true, min: 1 },
    gib: { type: "number", default: 1, min: 0.01 },
  });
  console.log(JSON.stringify(await benchTus({ runs: opts.runs, gib: opts.gib }), null, 2));
}
