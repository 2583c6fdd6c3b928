/**
 * Bench: the second release's surfaces attacked as an anonymous client would
 * (decisions: "Holding up, second pass"), one attack at a time, each on a
 * fresh server, with a well-behaved client on another address beside it:
 *
 *   slowReaders  every connection slot (--max-connections 40, 10 per address)
 *                held by GETs of a 20 MiB piece from 4 addresses that never
 *                read their answers (re-sent whenever the server closes one);
 *   carBlocks    a CAR of a million tiny blocks uploaded with a token (the
 *                sponsored tier refuses it past 100,000 blocks, also tried),
 *                and four concurrent walks of it (/ipfs/ CAR answers) in a loop;
 *   manifests    48 concurrent HEADs of /f/ of the largest manifest allowed
 *                (100,000 entries, 8.6 MB), in a loop;
 *   tusFlood     creations of 1-byte resumable uploads as fast as 10
 *                addresses can send them.
 *
 * The client uploads 64 KiB files and reads each back (scripts/bench_attack.ts
 * clientLoop), first with no attack, then under it. The service's own stall
 * gauge (/metrics storage_event_loop_delay_max_seconds, scraped from a fourth
 * address before and after each phase) says the longest the event loop was
 * held in it, and its histogram how many of its 10 ms ticks came over 50 ms
 * late. A probe on a third address asks /healthz every 25 ms: its longest
 * answer adds the probe's own scheduling and the network to the stall (on a
 * shared machine that alone reached 90-560 ms); /healthz also creates and
 * removes a file, so a busy disk lengthens it too. A second probe (loopProbe,
 * a fifth address) asks for a 1 KiB piece, answered from memory on the
 * pipeline's fast path, which only a stalled loop delays. Also sampled: the
 * server's RSS and open descriptors. Reported per attack.
 *
 *   deno run -A scripts/bench_attack_surfaces.ts [--seconds 15] [--only slowReaders,tusFlood]
 *
 * Talks only to 127.0.0.1 (from 127.0.0.2-127.0.0.250), bounded in time and
 * count, and stops only what it started, by PID.
 */
import * as net from "node:net";
import { createHash } from "node:crypto";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import * as dagCbor from "@ipld/dag-cbor";
import { create as createDigest } from "multiformats/hashes/digest";
import { rssBytes, spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { alive, clientLoop, openFds } from "./bench_attack.ts";
import type { ClientFigures } from "./bench_attack.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { MIB } from "../src/kernel/units.ts";
import { pieceCid } from "../src/client/sdk/piece_cid.ts";
import { MANIFEST_CONTENT_TYPE, serializeManifest } from "../src/kernel/manifest_format.ts";
import { carHeader } from "../src/ipfs/car_write.ts";
import { varint } from "multiformats";
import { EventLoopDelay } from "../src/kernel/event_loop_delay.ts";

export type SurfaceAttack = "slowReaders" | "carBlocks" | "manifests" | "tusFlood";
export const SURFACE_ATTACKS: readonly SurfaceAttack[] = [
  "slowReaders",
  "carBlocks",
  "manifests",
  "tusFlood",
];

const PROBE_ADDRESS = "127.0.0.249";
const LOOP_PROBE_ADDRESS = "127.0.0.247";
const PROBE_INTERVAL_MS = 25;
const SCRAPE_ADDRESS = "127.0.0.248";

export interface ProbeFigures {
  /** /healthz answers asked for and those that came (200 or 503) within 10 s. */
  asked: number;
  answered: number;
  latencyMs: { median: number; p99: number; max: number };
}

/** The service's stall gauge over one phase; null where a scrape did not answer. */
export interface StallFigures {
  /** The longest time between two ticks of its 10 ms timer (storage_event_loop_delay_max_seconds). */
  maxMs: number | null;
  /** Ticks in the phase, and those that came more than 50 ms after the one before. */
  ticks: number | null;
  ticksOver50ms: number | null;
}

interface Phase {
  client: ClientFigures;
  probe: ProbeFigures;
  loopProbe: ProbeFigures;
  stalls: StallFigures;
  /**
   * The longest this bench's own event loop was held in the phase (ms): the
   * client and probes are timed here, so a gap here is in their figures too
   * and is not the server's.
   */
  benchLoopMaxMs: number;
}

export interface SurfaceResult {
  attack: SurfaceAttack;
  serverArgs: string[];
  noAttack: Phase;
  /** The stalls of the attack's first 2 s, while it takes hold (before the client's phase). */
  attackStartStalls: StallFigures;
  underAttack: Phase;
  serverRssMiB: Summary;
  serverOpenFds: Summary;
  serverAlive: boolean;
  /** What the attacker got: answers by status, and what the attack left behind. */
  attacker: Record<string, number | string>;
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

function quantiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted.length === 0 ? NaN : sorted[Math.floor(q * (sorted.length - 1))];
  return { median: round1(at(0.5)), p99: round1(at(0.99)), max: round1(at(1)) };
}

/** Asks `path` every PROBE_INTERVAL_MS until stopped: how long each answer took. */
function startProbe(
  url: string,
  path = "/healthz",
  from = PROBE_ADDRESS,
): { stop(): Promise<ProbeFigures> } {
  const client = Deno.createHttpClient({ localAddress: from });
  const latencies: number[] = [];
  let asked = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      asked++;
      const started = performance.now();
      try {
        const response = await fetch(`${url}${path}`, {
          client,
          signal: AbortSignal.timeout(10_000),
        });
        await response.body?.cancel();
        if (response.status === 200 || response.status === 503) {
          latencies.push(performance.now() - started);
        }
      } catch {
        // Counted as asked, not answered.
      }
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.close();
      return { asked, answered: latencies.length, latencyMs: quantiles(latencies) };
    },
  };
}

interface StallScrape {
  maxSeconds: number;
  count: number;
  /** Ticks at most 50 ms after the one before (the histogram's le="0.05" bucket). */
  within50ms: number;
}

/** One scrape of the stall gauge (it restarts the longest-since-scrape); null if it failed. */
async function scrapeStalls(url: string): Promise<StallScrape | null> {
  using client = Deno.createHttpClient({ localAddress: SCRAPE_ADDRESS });
  try {
    const response = await fetch(`${url}/metrics`, { client, signal: AbortSignal.timeout(30_000) });
    const text = await response.text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
    const scrape = {
      maxSeconds: value(/^storage_event_loop_delay_max_seconds (\S+)$/m),
      count: value(/^storage_event_loop_delay_seconds_count (\S+)$/m),
      within50ms: value(/^storage_event_loop_delay_seconds_bucket\{le="0.05"\} (\S+)$/m),
    };
    return Object.values(scrape).some(Number.isNaN) ? null : scrape;
  } catch {
    return null;
  }
}

/** The stall gauge from `before` (a scrape at the stretch's start) to now, and the scrape. */
async function stallsSince(
  url: string,
  before: StallScrape | null,
): Promise<{ figures: StallFigures; scrape: StallScrape | null }> {
  const after = await scrapeStalls(url);
  if (after === null) {
    return { figures: { maxMs: null, ticks: null, ticksOver50ms: null }, scrape: null };
  }
  return {
    figures: {
      maxMs: round1(after.maxSeconds * 1000),
      ticks: before === null ? null : after.count - before.count,
      ticksOver50ms: before === null
        ? null
        : (after.count - after.within50ms) - (before.count - before.within50ms),
    },
    scrape: after,
  };
}

/** The client's loop with the probe beside it, and the stall gauge from `since` (default: now). */
async function measured(
  url: string,
  seconds: number,
  tag: string,
  since?: StallScrape | null,
): Promise<Phase> {
  const before = since === undefined ? await scrapeStalls(url) : since;
  BENCH_LOOP.takeMax();
  const probe = startProbe(url);
  const loopProbe = startProbe(url, `/p/${LOOP_PROBE_CID}`, LOOP_PROBE_ADDRESS);
  const client = await clientLoop(url, seconds, tag);
  return {
    client,
    probe: await probe.stop(),
    loopProbe: await loopProbe.stop(),
    stalls: (await stallsSince(url, before)).figures,
    benchLoopMaxMs: Math.round(BENCH_LOOP.takeMax()),
  };
}

/** This process's own stall gauge, the service's kind (kernel/event_loop_delay.ts). */
const BENCH_LOOP = new EventLoopDelay();

/** The loop probe's piece: 1 KiB, small enough for the cache of the pipeline's fast path. */
const LOOP_PROBE_CID = "bafkbenchloopprobe";

async function storeLoopProbePiece(url: string): Promise<void> {
  const answer = await upload(url, LOOP_PROBE_CID, new Uint8Array(1024).fill(5), {
    "content-type": "application/octet-stream",
  });
  if (answer.status !== 200) throw new Error(`loop probe piece: ${answer.text}`);
}

/** An attacker's loop from one address, until stopped; each turn one request. */
class Attacker {
  readonly statuses: Record<string, number> = {};
  #running = true;
  readonly #done: Promise<void>;

  constructor(from: string, turn: (client: Deno.HttpClient) => Promise<number>) {
    const client = Deno.createHttpClient({ localAddress: from });
    this.#done = (async () => {
      while (this.#running) {
        let key: string;
        try {
          key = String(await turn(client));
        } catch (error) {
          key = error instanceof Error ? error.name : "error";
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        this.statuses[key] = (this.statuses[key] ?? 0) + 1;
      }
      client.close();
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#done;
  }
}

/** A GET whose answer is never read past its first bytes, sent again whenever the server closes it. */
class UnreadGet {
  connects = 0;
  closedByServer = 0;
  #socket: net.Socket | null = null;
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(port: number, from: string, path: string) {
    this.#done = (async () => {
      while (!this.#stopped) {
        await new Promise<void>((resolve) => {
          const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
          this.#socket = socket;
          socket.on("connect", () => {
            this.connects++;
            socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
          });
          socket.once("data", () => socket.pause());
          socket.on("error", () => {});
          socket.on("close", () => {
            if (!this.#stopped) this.closedByServer++;
            resolve();
          });
        });
        if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#socket?.destroy();
    await this.#done;
  }
}

function addresses(first: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `127.0.0.${first + i}`);
}

async function tokenOf(url: string): Promise<string> {
  const response = await fetch(`${url}/api/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "bench@example.org", label: "bench" }),
  });
  if (response.status !== 201) throw new Error(`signup: ${response.status}`);
  return (await response.json()).token;
}

/**
 * A CAR of `leaves` raw blocks of `leafBytes` (8 by default: the attack's
 * tiny blocks) under a two-level DAG of dag-cbor nodes (1,000 links each).
 */
export function blockCar(
  leaves: number,
  leafBytes = 8,
): { root: CID; car: Uint8Array<ArrayBuffer> } {
  const chunks: Uint8Array[] = [];
  const section = (cid: CID, bytes: Uint8Array) => {
    const length = cid.bytes.length + bytes.length;
    chunks.push(varint.encodeTo(length, new Uint8Array(varint.encodingLength(length))));
    chunks.push(cid.bytes, bytes);
  };
  const sha256 = (bytes: Uint8Array) =>
    createDigest(0x12, new Uint8Array(createHash("sha256").update(bytes).digest()));
  const nodes: CID[] = [];
  let links: CID[] = [];
  const flush = () => {
    const bytes = dagCbor.encode({ links });
    const cid = CID.createV1(dagCbor.code, sha256(bytes));
    section(cid, bytes);
    nodes.push(cid);
    links = [];
  };
  for (let i = 0; i < leaves; i++) {
    const bytes = new Uint8Array(leafBytes);
    new DataView(bytes.buffer).setFloat64(0, i);
    const cid = CID.createV1(raw.code, sha256(bytes));
    section(cid, bytes);
    links.push(cid);
    if (links.length === 1000) flush();
  }
  if (links.length > 0) flush();
  links = nodes;
  const rootBytes = dagCbor.encode({ links });
  const root = CID.createV1(dagCbor.code, sha256(rootBytes));
  section(root, rootBytes);
  const header = carHeader([root]);
  const total = header.length + chunks.reduce((n, c) => n + c.length, 0);
  const car = new Uint8Array(total);
  car.set(header);
  let offset = header.length;
  for (const chunk of chunks) {
    car.set(chunk, offset);
    offset += chunk.length;
  }
  return { root, car };
}

async function upload(
  url: string,
  cid: string,
  body: Uint8Array<ArrayBuffer>,
  headers: Record<string, string>,
): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(`${url}/api/upload?cid=${cid}`, { method: "POST", headers, body });
  return { status: response.status, text: await response.text(), ms: performance.now() - started };
}

/**
 * The same upload sent by curl, a process of its own: an 86 MB body sent by
 * this process's fetch held its event loop up to 3.5 s at a time (a gap its
 * own 10 ms timer measured), which the client and probes beside it, timed in
 * this process, counted as the server's while the server's gauge said 38 ms.
 */
async function curlUpload(
  url: string,
  cid: string,
  file: string,
  headers: Record<string, string>,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "expect:"];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  args.push("--data-binary", `@${file}`, `${url}/api/upload?cid=${cid}`);
  const out = await new Deno.Command("curl", { args, stdout: "piped", stderr: "null" }).output();
  // A refusal before the body is in may end curl's send with an error; the status still came.
  return { status: Number(new TextDecoder().decode(out.stdout)), ms: performance.now() - started };
}

/** Sets up an attack on a running server; its start and stop. */
interface AttackRun {
  serverArgs: string[];
  prepare(service: SpawnedServer): Promise<void>;
  start(service: SpawnedServer): void;
  stop(): Promise<Record<string, number | string>>;
}

function attackOf(kind: SurfaceAttack, dataDir: string): AttackRun {
  switch (kind) {
    case "slowReaders":
      return slowReaders();
    case "carBlocks":
      return carBlocks();
    case "manifests":
      return manifests();
    case "tusFlood":
      return tusFlood(dataDir);
  }
}

function slowReaders(): AttackRun {
  const readers: UnreadGet[] = [];
  return {
    serverArgs: ["--max-connections", "40", "--max-connections-per-client", "10"],
    async prepare(service) {
      await streamUpload({
        url: service.url,
        cid: "bafkbenchslowread",
        size: 20 * MIB,
        chunk: new Uint8Array(MIB).fill(7),
      });
    },
    start(service) {
      const port = Number(new URL(service.url).port);
      for (const from of addresses(10, 4)) {
        for (let i = 0; i < 10; i++) {
          readers.push(new UnreadGet(port, from, "/p/bafkbenchslowread"));
        }
      }
    },
    async stop() {
      await Promise.all(readers.map((r) => r.stop()));
      return {
        unreadGets: readers.length,
        connects: readers.reduce((n, r) => n + r.connects, 0),
        closedByServer: readers.reduce((n, r) => n + r.closedByServer, 0),
      };
    },
  };
}

function carBlocks(): AttackRun {
  const attackers: Attacker[] = [];
  let root = "";
  let carFile = "";
  const figures: Record<string, number | string> = {};
  let uploads: Promise<void> = Promise.resolve();
  return {
    serverArgs: [],
    async prepare(service) {
      const built = blockCar(999_000);
      root = built.root.toString();
      figures.carBytes = built.car.length;
      carFile = await Deno.makeTempFile({ prefix: "bench-car-", suffix: ".car" });
      await Deno.writeFile(carFile, built.car);
      const token = await tokenOf(service.url);
      // The first token CAR is indexed before the attack: its walks are the attack.
      const first = await curlUpload(service.url, "bafkbenchmillion1", carFile, {
        "content-type": "application/vnd.ipld.car",
        authorization: `Bearer ${token}`,
      });
      figures.tokenUploadStatus = first.status;
      figures.tokenUploadSeconds = round1(first.ms / 1000);
      figures.token = token;
    },
    start(service) {
      // Four walks at once from two addresses (two each, the most one address may run).
      for (const from of addresses(20, 2)) {
        for (let i = 0; i < 2; i++) {
          attackers.push(
            new Attacker(from, async (client) => {
              const response = await fetch(`${service.url}/ipfs/${root}?format=car`, { client });
              await response.body?.cancel();
              return response.status;
            }),
          );
        }
      }
      // Meanwhile: the same CAR sponsored (refused past 100,000 blocks), and again with the token.
      uploads = (async () => {
        const sponsored = await curlUpload(service.url, "bafkbenchmillion2", carFile, {
          "content-type": "application/vnd.ipld.car",
        });
        figures.sponsoredUploadStatus = sponsored.status;
        figures.sponsoredUploadSeconds = round1(sponsored.ms / 1000);
        const again = await curlUpload(service.url, "bafkbenchmillion3", carFile, {
          "content-type": "application/vnd.ipld.car",
          authorization: `Bearer ${figures.token}`,
        });
        figures.tokenUploadDuringAttackStatus = again.status;
        figures.tokenUploadDuringAttackSeconds = round1(again.ms / 1000);
      })();
    },
    async stop() {
      await Promise.all(attackers.map((a) => a.stop()));
      await uploads;
      await Deno.remove(carFile);
      delete figures.token;
      const walks: Record<string, number> = {};
      for (const a of attackers) {
        for (const [k, v] of Object.entries(a.statuses)) walks[k] = (walks[k] ?? 0) + v;
      }
      return { ...figures, walks: JSON.stringify(walks) };
    },
  };
}

function manifests(): AttackRun {
  const attackers: Attacker[] = [];
  let manifestCid = "";
  const figures: Record<string, number | string> = {};
  return {
    serverArgs: [],
    async prepare(service) {
      const part = new Uint8Array(200).fill(1);
      const { cid: partCid } = await pieceCid(part);
      const stored = await upload(service.url, partCid, part, {
        "content-type": "application/octet-stream",
      });
      if (stored.status !== 200) throw new Error(`part: ${stored.text}`);
      const manifest = serializeManifest({
        format: "storage-manifest",
        version: 1,
        name: "largest.bin",
        contentType: "application/octet-stream",
        size: 200 * 100_000,
        sha256: "0".repeat(64),
        pieces: Array.from({ length: 100_000 }, () => ({ cid: partCid, size: 200 })),
      });
      manifestCid = "bafkbenchlargestmanifest";
      const answer = await upload(service.url, manifestCid, manifest, {
        "content-type": MANIFEST_CONTENT_TYPE,
      });
      if (answer.status !== 200) throw new Error(`manifest: ${answer.text}`);
      figures.manifestBytes = manifest.length;
    },
    start(service) {
      for (const from of addresses(30, 6)) {
        for (let i = 0; i < 8; i++) {
          attackers.push(
            new Attacker(from, async (client) => {
              const response = await fetch(`${service.url}/f/${manifestCid}`, {
                method: "HEAD",
                client,
              });
              await response.body?.cancel();
              return response.status;
            }),
          );
        }
      }
    },
    async stop() {
      await Promise.all(attackers.map((a) => a.stop()));
      const heads: Record<string, number> = {};
      for (const a of attackers) {
        for (const [k, v] of Object.entries(a.statuses)) heads[k] = (heads[k] ?? 0) + v;
      }
      return { ...figures, concurrentHeads: attackers.length, heads: JSON.stringify(heads) };
    },
  };
}

function tusFlood(dataDir: string): AttackRun {
  const attackers: Attacker[] = [];
  return {
    serverArgs: [],
    prepare: () => Promise.resolve(),
    start(s) {
      let n = 0;
      for (const from of addresses(40, 10)) {
        attackers.push(
          new Attacker(from, async (client) => {
            const cid = `bafkbenchtusflood${n++}`;
            const response = await fetch(`${s.url}/api/tus`, {
              method: "POST",
              client,
              headers: {
                "tus-resumable": "1.0.0",
                "upload-length": "1",
                "upload-metadata": `cid ${btoa(cid)},filetype ${btoa("text/plain")}`,
              },
            });
            await response.body?.cancel();
            return response.status;
          }),
        );
      }
    },
    async stop() {
      await Promise.all(attackers.map((a) => a.stop()));
      const creations: Record<string, number> = {};
      for (const a of attackers) {
        for (const [k, v] of Object.entries(a.statuses)) creations[k] = (creations[k] ?? 0) + v;
      }
      const partials = await countPartials(dataDir);
      return { creations: JSON.stringify(creations), unfinishedUploadFilesLeft: partials };
    },
  };
}

/** Files of unfinished uploads in the server's data directory. */
async function countPartials(dataDir: string): Promise<number> {
  const dir = `${dataDir}/pieces/partial`;
  let count = 0;
  try {
    for await (const _ of Deno.readDir(dir)) count++;
  } catch {
    return 0;
  }
  return count;
}

export async function benchAttackSurface(
  kind: SurfaceAttack,
  options: { seconds: number; dir: string },
): Promise<SurfaceResult> {
  BENCH_LOOP.start(); // unref'd: it keeps nothing alive
  const attack = attackOf(kind, options.dir);
  const serverArgs = ["--sponsored-daily-cap", "100GiB", ...attack.serverArgs];
  await using service = await spawnServer(options.dir, serverArgs);
  await storeLoopProbePiece(service.url);
  await attack.prepare(service);
  const noAttack = await measured(service.url, options.seconds, `${kind}calm`);
  const samples = { rss: [] as number[], fds: [] as number[] };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.rss.push(((await rssBytes(service.process.pid)) ?? 0) / MIB);
      samples.fds.push(await openFds(service.process.pid));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  let underAttack: SurfaceResult["underAttack"];
  let attackStartStalls: StallFigures;
  let attacker: Record<string, number | string>;
  try {
    const beforeAttack = await scrapeStalls(service.url);
    attack.start(service);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the attack is in place
    const taken = await stallsSince(service.url, beforeAttack);
    attackStartStalls = taken.figures;
    underAttack = await measured(service.url, options.seconds, `${kind}storm`, taken.scrape);
  } finally {
    attacker = await attack.stop();
    sampling = false;
    await sampler;
  }
  return {
    attack: kind,
    serverArgs,
    noAttack,
    attackStartStalls,
    underAttack,
    serverRssMiB: summarize(samples.rss.map(round1)),
    serverOpenFds: summarize(samples.fds),
    serverAlive: await alive(service),
    attacker,
  };
}

if (import.meta.main) {
  const at = (name: string) => Deno.args.indexOf(`--${name}`);
  const seconds = at("seconds") === -1 ? 15 : Number(Deno.args[at("seconds") + 1]);
  const only = at("only") === -1
    ? SURFACE_ATTACKS
    : Deno.args[at("only") + 1].split(",") as SurfaceAttack[];
  const results: SurfaceResult[] = [];
  for (const kind of only) {
    const dir = await Deno.makeTempDir({ prefix: `bench-surface-${kind}-` });
    try {
      results.push(await benchAttackSurface(kind, { seconds, dir }));
      console.error(JSON.stringify(results.at(-1)));
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
  console.log(JSON.stringify(results, null, 2));
}
