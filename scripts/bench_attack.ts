/**
 * Bench: the service under a connection flood, as an attacker on the open
 * internet would try it, and a well-behaved client beside it.
 *
 * The attacker holds (and re-opens whenever the server closes them) idle
 * connections that never send a byte, connections that send their request
 * head one byte a second, and uploads whose bodies trickle 1 KiB every 2
 * seconds, all from several 127.0.0.x source addresses. Meanwhile one client
 * on another address uploads 64 KiB files and retrieves each, one after the
 * other. Reported: that client's success rate and latency (median, p99) with
 * no attack and under it, the server's RSS and open descriptors during the
 * attack, how many attack connections were open, and whether the server
 * lived through it.
 *
 *   deno run -A scripts/bench_attack.ts [--idle 3000] [--slow-headers 200] [--slow-bodies 50]
 *                                       [--seconds 40] [--nofile 1024] [-- server flags…]
 *
 * Talks only to 127.0.0.1 (from 127.0.0.2-127.0.0.250), bounded in time and
 * connection count, and stops only what it started, by PID.
 */
import * as net from "node:net";
import { rssBytes, spawnServer } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { KIB, MIB } from "../src/kernel/units.ts";

/** The well-behaved client's address: none of the attacker's. */
const CLIENT_ADDRESS = "127.0.0.250";
/** A client operation that takes longer than this has failed. */
const OPERATION_TIMEOUT_MS = 10_000;
/** How long an attack slot waits before connecting again after the server closed it. */
const RECONNECT_DELAY_MS = 500;

/**
 * The attacker's kinds of connection: idle (never a byte), a request head
 * sent a byte a second, an upload body trickled 1 KiB every 2 seconds.
 */
export type AttackKind = "idle" | "slowHeaders" | "slowBodies";

/** How many connections of each kind the attacker holds open. */
export type AttackPlan = Record<AttackKind, number>;

export interface AttackBenchOptions extends AttackPlan {
  /** How long the client works with no attack, and again under it (after the ramp-up). */
  seconds: number;
  /** The server's open-file limit (prlimit); undefined: the bench's own. */
  nofile?: number;
  /** Flags for the service (the bounds under test). */
  serverArgs: string[];
  /** Where the data directory goes (removed by the caller). */
  dir: string;
}

export interface ClientFigures {
  operations: number;
  successRate: number;
  latencyMs: { median: number; p99: number; max: number };
  failures: Record<string, number>;
}

export interface AttackBenchResult {
  nofile: number | "bench default";
  noAttack: ClientFigures;
  underAttack: ClientFigures;
  attackOpen: Record<AttackKind, Summary>;
  attackConnects: number;
  /** The server's RSS at start and after the calm run, its descriptors then. */
  serverBefore: { rssAtStartMiB: number; rssAfterCalmMiB: number; openFdsAfterCalm: number };
  /** During the attack (sampled every half second). */
  serverRssMiB: Summary;
  serverOpenFds: Summary;
  serverAlive: boolean;
}

/** The source addresses of one kind of attack: `count` connections, `perAddress` from each. */
function addressesFor(first: number, count: number, perAddress: number): string[] {
  return Array.from({ length: count }, (_, i) => `127.0.0.${first + Math.floor(i / perAddress)}`);
}

/** One attacker connection, opened again whenever the server closes it, until stopped. */
class AttackSlot {
  open = false;
  connects = 0;
  #socket: net.Socket | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(
    readonly kind: AttackKind,
    readonly port: number,
    readonly from: string,
    readonly id: number,
  ) {
    this.#done = this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      await this.#connectOnce();
      if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
    }
  }

  #connectOnce(): Promise<void> {
    return new Promise((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port: this.port, localAddress: this.from });
      this.#socket = socket;
      socket.on("connect", () => {
        this.open = true;
        this.connects++;
        this.#behave(socket);
      });
      socket.on("data", () => {}); // answers (408, 503, …) are read and dropped
      socket.on("error", () => {});
      socket.on("close", () => {
        this.open = false;
        if (this.#timer !== null) clearInterval(this.#timer);
        this.#timer = null;
        resolve();
      });
    });
  }

  #behave(socket: net.Socket): void {
    const write = (text: string | Uint8Array) => {
      if (!socket.destroyed) socket.write(text);
    };
    if (this.kind === "slowHeaders") {
      const head = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-${this.id}: `;
      let sent = 0;
      // One byte a second, and the head never ends.
      this.#timer = setInterval(() => write(sent < head.length ? head[sent++] : "a"), 1000);
    } else if (this.kind === "slowBodies") {
      write(
        `POST /api/upload?cid=attackslow${this.id}x${this.connects} HTTP/1.1\r\n` +
          `Host: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n` +
          `Content-Length: ${8 * MIB}\r\n\r\n`,
      );
      const kib = new Uint8Array(KIB);
      write(kib);
      this.#timer = setInterval(() => write(kib), 2000);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#socket?.destroy();
    await this.#done;
  }
}

/** Upload 64 KiB under a new cid, then retrieve it: each a timed operation. */
export async function clientLoop(
  url: string,
  seconds: number,
  tag: string,
): Promise<ClientFigures> {
  using client = Deno.createHttpClient({ localAddress: CLIENT_ADDRESS });
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let operations = 0;
  const deadline = performance.now() + seconds * 1000;
  const body = new Uint8Array(64 * KIB);
  for (let i = 0; performance.now() < deadline && i < 100_000; i++) {
    body[0] = i & 0xff;
    body[1] = i >> 8;
    const cid = `benchattack${tag}${i}x`;
    for (const operation of ["upload", "retrieve"] as const) {
      operations++;
      const started = performance.now();
      try {
        const response = operation === "upload"
          ? await fetch(`${url}/api/upload?cid=${cid}`, {
            method: "POST",
            client,
            headers: { "content-type": "application/octet-stream" },
            body,
            signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS),
          })
          : await fetch(`${url}/p/${cid}`, {
            client,
            signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS),
          });
        const bytes = await response.bytes();
        if (response.status !== 200) throw new Error(`${operation} ${response.status}`);
        if (operation === "retrieve" && bytes.length !== body.length) {
          throw new Error("retrieve short");
        }
        latencies.push(performance.now() - started);
      } catch (error) {
        const reason = error instanceof Error ? error.message.slice(0, 60) : String(error);
        failures[reason] = (failures[reason] ?? 0) + 1;
      }
    }
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted.length === 0 ? NaN : sorted[Math.floor(q * (sorted.length - 1))];
  return {
    operations,
    successRate: Math.round((latencies.length / Math.max(1, operations)) * 10_000) / 10_000,
    latencyMs: { median: round1(at(0.5)), p99: round1(at(0.99)), max: round1(at(1)) },
    failures,
  };
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export async function openFds(pid: number): Promise<number> {
  let count = 0;
  try {
    for await (const _ of Deno.readDir(`/proc/${pid}/fd`)) count++;
  } catch {
    return 0;
  }
  return count;
}

export function alive(service: SpawnedServer): Promise<boolean> {
  return Promise.race([
    service.exited.then(() => false),
    fetch(`${service.url}/healthz`, { signal: AbortSignal.timeout(5000) })
      .then(async (r) => {
        await r.body?.cancel();
        return r.status === 200 || r.status === 503;
      }, () => false),
  ]);
}

export async function benchAttack(options: AttackBenchOptions): Promise<AttackBenchResult> {
  await using service = await spawnServer(options.dir, options.serverArgs, {
    nofile: options.nofile,
  });
  const port = Number(new URL(service.url).port);
  const startedRss = await rssBytes(service.process.pid);
  const noAttack = await clientLoop(service.url, options.seconds, "calm");
  const calmRss = await rssBytes(service.process.pid);
  const calmFds = await openFds(service.process.pid);

  const slots: AttackSlot[] = [];
  const plan: [AttackKind, number, string[]][] = [
    ["idle", options.idle, addressesFor(2, options.idle, 100)],
    ["slowHeaders", options.slowHeaders, addressesFor(40, options.slowHeaders, 20)],
    ["slowBodies", options.slowBodies, addressesFor(60, options.slowBodies, 10)],
  ];
  const samples = { rss: [] as number[], fds: [] as number[] };
  const openCounts: Record<AttackKind, number[]> = { idle: [], slowHeaders: [], slowBodies: [] };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.rss.push(((await rssBytes(service.process.pid)) ?? 0) / MIB);
      samples.fds.push(await openFds(service.process.pid));
      for (const kind of Object.keys(openCounts) as AttackKind[]) {
        openCounts[kind].push(slots.filter((s) => s.kind === kind && s.open).length);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  let underAttack: ClientFigures;
  try {
    // Ramp up a few hundred connections at a time, as fast as the machine takes them.
    for (const [kind, count, addresses] of plan) {
      for (let i = 0; i < count; i++) {
        slots.push(new AttackSlot(kind, port, addresses[i], i));
        if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5000)); // the flood is in place
    underAttack = await clientLoop(service.url, options.seconds, "storm");
  } finally {
    sampling = false;
    await sampler;
    await Promise.all(slots.map((slot) => slot.stop()));
  }
  const serverAlive = await alive(service);
  return {
    nofile: options.nofile ?? "bench default",
    noAttack,
    underAttack,
    attackOpen: {
      idle: summarize(openCounts.idle),
      slowHeaders: summarize(openCounts.slowHeaders),
      slowBodies: summarize(openCounts.slowBodies),
    },
    attackConnects: slots.reduce((n, slot) => n + slot.connects, 0),
    serverBefore: {
      rssAtStartMiB: round1((startedRss ?? 0) / MIB),
      rssAfterCalmMiB: round1((calmRss ?? 0) / MIB),
      openFdsAfterCalm: calmFds,
    },
    serverRssMiB: summarize(samples.rss.map(round1)),
    serverOpenFds: summarize(samples.fds),
    serverAlive,
  };
}

if (import.meta.main) {
  const separator = Deno.args.indexOf("--");
  const own = separator === -1 ? Deno.args : Deno.args.slice(0, separator);
  const serverArgs = separator === -1 ? [] : Deno.args.slice(separator + 1);
  const flag = (name: string, fallback: number) => {
    const i = own.indexOf(`--${name}`);
    return i === -1 ? fallback : Number(own[i + 1]);
  };
  const dir = await Deno.makeTempDir({ prefix: "bench-attack-" });
  try {
    const result = await benchAttack({
      idle: flag("idle", 3000),
      slowHeaders: flag("slow-headers", 200),
      slowBodies: flag("slow-bodies", 50),
      seconds: flag("seconds", 40),
      nofile: own.includes("--nofile") ? flag("nofile", 1024) : undefined,
      serverArgs: ["--sponsored-daily-cap", "100GiB", ...serverArgs],
      dir,
    });
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
