/**
 * A throwaway one-node Ceph cluster serving S3 on 127.0.0.1, for the S3 piece
 * driver's tests and bench: one ceph-mon, one ceph-osd on memstore (objects
 * live in the OSD's memory: nothing to format, nothing left on disk) and one
 * radosgw (beast frontend), all under a fresh temp directory with its own
 * ceph.conf. /etc/ceph and /var/lib/ceph are never read or written: every
 * path Ceph would default there (data, logs, sockets, crash dumps) points into
 * the temp directory, and the commands run with -c <that ceph.conf> and a
 * cleared environment (a stray CEPH_ARGS or CEPH_CONF cannot leak in).
 *
 * Why cephx is off: the cluster is a single user's, bound to 127.0.0.1 and
 * gone after the run; cephx would only add keyrings to make and pass around,
 * and one more way for a start to fail. Off, the messenger must not insist on
 * "secure" mode (radosgw's monitor client does by default, and secure mode
 * needs cephx keys): every mode is set to crc.
 *
 * Why no ceph-mgr: nothing here needs one (pools are made by the monitor, PGs
 * peer without it). Health therefore stays HEALTH_WARN ("no active mgr"), so
 * readiness is judged by what the tests need, each polled under a bound: the
 * monitor answers, the OSD is up, radosgw answers HTTP, and an S3 round trip
 * (bucket, PUT, GET, a multipart upload started and aborted, which makes
 * radosgw create its lazily made pools now rather than in the first test).
 *
 * A start takes 10 to 20 s and is not always clean (a port taken between
 * choosing it and binding it, a daemon that dies early): a try that fails or
 * passes its bound is torn down (its processes stopped by PID, its directory
 * removed) and the whole start is tried again, up to `attempts` times.
 *
 * Ports: the monitor's and radosgw's are chosen free by the kernel (its
 * ephemeral range); the OSD binds in Ceph's own 6800-7300 range and steps past
 * taken ports itself. So two clusters can run side by side.
 *
 * Processes are this process's children, unref'd (a cluster shared by the tests
 * of a file must not count as a pending op of the test that started it), and
 * stopped by PID: radosgw and the monitor with SIGTERM, the OSD with SIGKILL
 * (memstore would write every object to disk on a clean stop, for nothing).
 */
import { AwsClient } from "aws4fetch";
import { freePorts } from "./ports.ts";
import { GIB } from "../../src/kernel/units.ts";
import type { S3ClientOptions } from "../../src/driver/s3/s3_client.ts";

export interface RadosgwOptions {
  /** Starts tried from scratch before giving up (default 3). */
  attempts?: number;
  /** Bound of one try, in ms (default 120 000). */
  attemptTimeoutMs?: number;
  /** Where the cluster's temp directory is made (default: the system's temp directory). */
  tempRoot?: string;
  /** The capacity the in-memory OSD reports (default 8 GiB); only what is written uses memory. */
  memstoreBytes?: number;
  /** Told each step and each failed try, for a CLI to print. */
  onProgress?: (line: string) => void;
  /** Aborting stops the start (the try in progress is torn down) and throws the reason. */
  signal?: AbortSignal;
}

export interface RadosgwCluster extends AsyncDisposable {
  /** http://127.0.0.1:<port>: path-style S3. */
  readonly endpoint: string;
  /** Radosgw accepts any region in signatures; this is the one to sign with. */
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The temp directory holding ceph.conf, data, logs and sockets. */
  readonly dir: string;
  /** PIDs of ceph-mon, ceph-osd and radosgw. */
  readonly pids: readonly number[];
  /** The try that succeeded (1 = first). */
  readonly attempt: number;
  /** From the call to ready, all tries included. */
  readonly startMs: number;
  /** The daemon that has exited since the start ("radosgw", …), or null while all run. */
  exitedDaemon(): string | null;
  /** The S3 gateway alone, for fault tests and benches (see RadosgwGateway). */
  readonly gateway: RadosgwGateway;
  /** Stops every process by PID and removes the directory; safe to call twice. */
  stop(): Promise<void>;
  /** For `unload` handlers, which cannot wait: SIGKILL every process, remove the directory. */
  killSync(): void;
}

/**
 * Faults of the S3 gateway, with the rest of the cluster untouched: a
 * gateway that is there but silent (SIGSTOP: connections are still accepted
 * by the kernel, nothing answers), and one that is gone (stopped: connections
 * are refused) until it is started again on the same port, with the same
 * users and data (they live in the cluster, not in the gateway).
 */
export interface RadosgwGateway {
  /** The gateway's pid (a new one after start()). */
  readonly pid: number;
  /** SIGSTOP: the gateway stops answering. */
  pause(): void;
  /** SIGCONT: it answers again, including what waited meanwhile. */
  resume(): void;
  /** Stops it (SIGTERM): connections to its port are refused. */
  stop(): Promise<void>;
  /** Starts it again on the same port; resolves once it answers HTTP (bounded). */
  start(): Promise<void>;
}

const BINARIES = ["ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph", "monmaptool"];
const REGION = "us-east-1";
const POLL_MS = 200;
/** A single CLI call (ceph, radosgw-admin, mkfs) that takes longer than this is hung. */
const COMMAND_TIMEOUT_MS = 20_000;

/**
 * How to reach an S3: its endpoint, the region to sign with, and the keys;
 * the fields of the S3 driver's client options they are handed to, so the two
 * cannot drift apart.
 */
export type S3Access = Pick<
  S3ClientOptions,
  "endpoint" | "region" | "accessKeyId" | "secretAccessKey"
>;

/**
 * The shared cluster scripts/radosgw.ts published for a whole run (its
 * STORAGE_TEST_S3_* variables), or null when none is named.
 */
export function s3AccessFromEnvironment(): S3Access | null {
  const endpoint = Deno.env.get("STORAGE_TEST_S3_ENDPOINT");
  const accessKeyId = Deno.env.get("STORAGE_TEST_S3_ACCESS_KEY_ID");
  const secretAccessKey = Deno.env.get("STORAGE_TEST_S3_SECRET_ACCESS_KEY");
  if (!endpoint || !accessKeyId || !secretAccessKey) return null;
  const region = Deno.env.get("STORAGE_TEST_S3_REGION") ?? REGION;
  return { endpoint, region, accessKeyId, secretAccessKey };
}

/** The Ceph programs the cluster needs that are not on PATH (empty when it can start). */
export function missingRadosgwBinaries(): string[] {
  return BINARIES.filter((name) => findOnPath(name) === null);
}

/** Starts a cluster, trying again from scratch when a try fails; throws after the last. */
export async function startRadosgw(options: RadosgwOptions = {}): Promise<RadosgwCluster> {
  const attempts = options.attempts ?? 3;
  const missing = missingRadosgwBinaries();
  if (missing.length > 0) {
    throw new Error(
      `Cannot start radosgw: ${missing.join(", ")} not installed ` +
        "(Debian: radosgw ceph-mon ceph-osd ceph-common)",
    );
  }
  const started = performance.now();
  const failures: string[] = [];
  for (let attempt = 1; attempt <= attempts; attempt++) {
    options.signal?.throwIfAborted();
    const tryOnce = new ClusterTry(options, attempt);
    try {
      await tryOnce.start(started);
      return tryOnce.cluster(attempt, performance.now() - started);
    } catch (error) {
      const why = (error as Error).message;
      failures.push(`try ${attempt}: ${why}`);
      options.onProgress?.(`radosgw: try ${attempt} of ${attempts} failed: ${why}`);
      await tryOnce.stop();
      if (options.signal?.aborted) throw options.signal.reason;
    }
  }
  throw new Error(`Cannot start radosgw after ${attempts} tries:\n${failures.join("\n")}`);
}

/** A daemon this module spawned: its child process and whether it has exited. */
interface Daemon {
  name: string;
  child: Deno.ChildProcess;
  exitCode: number | null;
  log: string;
}

/** One try at a cluster: its directory, its daemons, and tearing them down. */
class ClusterTry {
  readonly #options: RadosgwOptions;
  readonly #attempt: number;
  readonly #daemons: Daemon[] = [];
  #dir = "";
  #conf = "";
  #endpoint = "";
  #keys = { accessKeyId: "", secretAccessKey: "" };
  #stopped = false;

  constructor(options: RadosgwOptions, attempt: number) {
    this.#options = options;
    this.#attempt = attempt;
  }

  async start(since: number): Promise<void> {
    const deadline = performance.now() + (this.#options.attemptTimeoutMs ?? 120_000);
    const step = (what: string) => {
      const seconds = ((performance.now() - since) / 1000).toFixed(1);
      this.#options.onProgress?.(`radosgw: [${seconds} s] try ${this.#attempt}: ${what}`);
    };
    this.#dir = await Deno.makeTempDir({ prefix: "radosgw-", dir: this.#options.tempRoot });
    for (const sub of ["run", "log", "mon", "osd", "rgw", "crash"]) {
      await Deno.mkdir(`${this.#dir}/${sub}`);
    }
    const fsid = crypto.randomUUID();
    const [monPort, rgwPort] = freePorts(2);
    this.#conf = `${this.#dir}/ceph.conf`;
    await Deno.writeTextFile(
      this.#conf,
      cephConf({
        dir: this.#dir,
        fsid,
        monPort,
        rgwPort,
        memstoreBytes: this.#options.memstoreBytes ?? 8 * GIB,
      }),
    );
    this.#endpoint = `http://127.0.0.1:${rgwPort}`;

    step(`ceph-mon on 127.0.0.1:${monPort}`);
    const monmap = `${this.#dir}/monmap`;
    await this.#run("monmaptool", [
      "--create",
      "--addv",
      "a",
      `[v2:127.0.0.1:${monPort}]`,
      "--fsid",
      fsid,
      monmap,
    ]);
    await this.#run("ceph-mon", ["-c", this.#conf, "--mkfs", "-i", "a", "--monmap", monmap]);
    this.#spawn("ceph-mon", ["-c", this.#conf, "-f", "-i", "a"], "mon.a");
    await this.#until(deadline, "the monitor to answer", async () => {
      return (await this.#ceph(["mon", "stat"])) !== null;
    });

    step("ceph-osd on memstore");
    const osdUuid = crypto.randomUUID();
    const osdId = (await this.#run("ceph", ["-c", this.#conf, "osd", "new", osdUuid])).trim();
    if (osdId !== "0") throw new Error(`ceph osd new gave id "${osdId}", expected 0`);
    await this.#run("ceph-osd", ["-c", this.#conf, "--mkfs", "-i", "0", "--osd-uuid", osdUuid]);
    this.#spawn("ceph-osd", ["-c", this.#conf, "-f", "-i", "0"], "osd.0");
    await this.#until(deadline, "the OSD to be up", async () => {
      const dump = await this.#ceph(["osd", "dump", "-f", "json"]);
      if (dump === null) return false;
      const osds = (JSON.parse(dump) as { osds?: { osd: number; up: number }[] }).osds ?? [];
      return osds.some((osd) => osd.osd === 0 && osd.up === 1);
    });

    step(`radosgw on ${this.#endpoint}`);
    this.#spawn("radosgw", ["-c", this.#conf, "-f", "-n", "client.rgw"], "client.rgw");
    await this.#until(deadline, "radosgw to answer HTTP", () => this.#answersHttp());

    step("an S3 user, then a bucket, PUT, GET and a multipart upload");
    this.#keys = { accessKeyId: randomText(20, UPPER), secretAccessKey: randomText(40, MIXED) };
    await this.#run("radosgw-admin", [
      "-c",
      this.#conf,
      "user",
      "create",
      "--uid",
      "storage-test",
      "--display-name",
      "storage tests",
      "--access-key",
      this.#keys.accessKeyId,
      "--secret-key",
      this.#keys.secretAccessKey,
    ]);
    await this.#until(deadline, "an S3 round trip", () => this.#probe());
    step("ready");
  }

  cluster(attempt: number, startMs: number): RadosgwCluster {
    return {
      endpoint: this.#endpoint,
      region: REGION,
      ...this.#keys,
      dir: this.#dir,
      pids: this.#daemons.map((daemon) => daemon.child.pid),
      attempt,
      startMs: Math.round(startMs),
      exitedDaemon: () => this.#daemons.find((daemon) => daemon.exitCode !== null)?.name ?? null,
      gateway: this.#gateway(),
      stop: () => this.stop(),
      killSync: () => this.killSync(),
      [Symbol.asyncDispose]: () => this.stop(),
    };
  }

  #gateway(): RadosgwGateway {
    const daemon = () => this.#daemons.find((d) => d.name === "radosgw")!;
    const signal = (name: Deno.Signal) => {
      try {
        Deno.kill(daemon().child.pid, name);
      } catch { /* exited */ }
    };
    return {
      get pid() {
        return daemon().child.pid;
      },
      pause: () => signal("SIGSTOP"),
      resume: () => signal("SIGCONT"),
      stop: async () => {
        const gateway = daemon();
        signal("SIGCONT"); // a stopped process would not act on SIGTERM
        await stopDaemon(gateway, "SIGTERM");
        this.#daemons.splice(this.#daemons.indexOf(gateway), 1);
      },
      start: async () => {
        this.#spawn("radosgw", ["-c", this.#conf, "-f", "-n", "client.rgw"], "client.rgw");
        await this.#until(
          performance.now() + 60_000,
          "radosgw to answer HTTP again",
          () => this.#answersHttp(),
        );
      },
    };
  }

  async #answersHttp(): Promise<boolean> {
    try {
      const response = await fetch(`${this.#endpoint}/`, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      return response.status === 200;
    } catch {
      return false;
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const daemon of this.#daemons) {
      if (daemon.exitCode !== null) continue;
      try {
        Deno.kill(daemon.child.pid, "SIGCONT"); // a paused gateway must hear SIGTERM
      } catch { /* exited */ }
    }
    // radosgw first (it talks to the others), the monitor last (the others ask it to leave).
    for (const daemon of [...this.#daemons].reverse()) {
      await stopDaemon(daemon, daemon.name === "ceph-osd" ? "SIGKILL" : "SIGTERM");
    }
    if (this.#dir) await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }

  killSync(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const daemon of this.#daemons) {
      if (daemon.exitCode !== null) continue;
      try {
        Deno.kill(daemon.child.pid, "SIGKILL");
      } catch { /* already gone */ }
    }
    try {
      if (this.#dir) Deno.removeSync(this.#dir, { recursive: true });
    } catch { /* best effort: the process is exiting */ }
  }

  /** An S3 round trip with the user's keys; false (try again) on any failure. */
  async #probe(): Promise<boolean> {
    const client = new AwsClient({
      ...this.#keys,
      region: REGION,
      service: "s3",
      retries: 0,
    });
    const bucket = `${this.#endpoint}/probe-${randomText(12, LOWER)}`;
    const body = new TextEncoder().encode(`probe ${crypto.randomUUID()}`);
    const call = async (url: string, init: RequestInit = {}) => {
      const response = await client.fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
      const text = await response.text();
      if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${response.status}`);
      return text;
    };
    try {
      await call(bucket, { method: "PUT" });
      await call(`${bucket}/object`, { method: "PUT", body });
      const read = await call(`${bucket}/object`);
      if (read !== new TextDecoder().decode(body)) throw new Error("GET gave other bytes");
      const initiated = await call(`${bucket}/multipart?uploads`, { method: "POST" });
      const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(initiated)?.[1];
      if (!uploadId) throw new Error("no UploadId in the multipart answer");
      await call(`${bucket}/multipart?uploadId=${encodeURIComponent(uploadId)}`, {
        method: "DELETE",
      });
      await call(`${bucket}/object`, { method: "DELETE" });
      await call(bucket, { method: "DELETE" });
      return true;
    } catch (error) {
      this.#options.onProgress?.(`radosgw: S3 not ready yet: ${(error as Error).message}`);
      return false;
    }
  }

  /** Polls check() until it holds; fails at the deadline or as soon as a daemon has exited. */
  async #until(
    deadline: number,
    what: string,
    check: () => Promise<boolean>,
  ): Promise<void> {
    while (true) {
      this.#options.signal?.throwIfAborted();
      const dead = this.#daemons.find((daemon) => daemon.exitCode !== null);
      if (dead) {
        const log = await logTail(dead.log);
        throw new Error(`${dead.name} exited (code ${dead.exitCode}) waiting for ${what}:\n${log}`);
      }
      if (await check()) return;
      if (performance.now() > deadline) {
        const logs = await Promise.all(this.#daemons.map((daemon) => logTail(daemon.log)));
        throw new Error(`timed out waiting for ${what}:\n${logs.join("\n")}`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  #spawn(binary: string, args: string[], logName: string): void {
    const child = new Deno.Command(findOnPath(binary) ?? binary, {
      args,
      ...cephEnvironment(this.#dir),
      stdin: "null",
      // Foreground daemons log to their file in log/; nothing is piped, so no read stays pending.
      stdout: "null",
      stderr: "null",
    }).spawn();
    child.unref();
    const daemon: Daemon = {
      name: binary,
      child,
      exitCode: null,
      log: `${this.#dir}/log/${logName}.log`,
    };
    child.status.then((status) => daemon.exitCode = status.code);
    this.#daemons.push(daemon);
  }

  /** The stdout of `ceph <args>`, or null when it fails (not up yet). */
  async #ceph(args: string[]): Promise<string | null> {
    try {
      return await this.#run("ceph", ["-c", this.#conf, "--connect-timeout", "5", ...args]);
    } catch {
      return null;
    }
  }

  /** Runs a command to its end under COMMAND_TIMEOUT_MS; its stdout, or an error with stderr. */
  async #run(binary: string, args: string[]): Promise<string> {
    const output = await new Deno.Command(findOnPath(binary) ?? binary, {
      args,
      ...cephEnvironment(this.#dir),
      stdin: "null",
      signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS),
    }).output();
    const decoder = new TextDecoder();
    if (!output.success) {
      const stderr = decoder.decode(output.stderr).trim().split("\n").slice(-5).join("\n");
      throw new Error(`${binary} ${args.slice(0, 4).join(" ")} failed (${output.code}): ${stderr}`);
    }
    return decoder.decode(output.stdout);
  }
}

/** SIGTERM (or SIGKILL) by PID; SIGKILL after 10 s if it is still there. */
async function stopDaemon(daemon: Daemon, signal: Deno.Signal): Promise<void> {
  if (daemon.exitCode !== null) {
    // Already reaped; awaiting status settles the op without keeping anything alive.
    daemon.child.ref();
    await daemon.child.status;
    return;
  }
  daemon.child.ref();
  try {
    daemon.child.kill(signal);
  } catch { /* exited meanwhile */ }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const killed = new Promise<"late">((resolve) =>
    timer = setTimeout(() => resolve("late"), 10_000)
  );
  const outcome = await Promise.race([daemon.child.status, killed]);
  clearTimeout(timer);
  if (outcome === "late") {
    try {
      daemon.child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
    await daemon.child.status;
  }
}

interface ConfValues {
  dir: string;
  fsid: string;
  monPort: number;
  rgwPort: number;
  memstoreBytes: number;
}

/** The cluster's ceph.conf: every path in `dir`, every pool one copy. */
function cephConf(v: ConfValues): string {
  return `[global]
fsid = ${v.fsid}
mon host = v2:127.0.0.1:${v.monPort}
public addr = 127.0.0.1
ms bind msgr1 = false
# cephx off (see scripts/lib/radosgw.ts), so no connection may require "secure" mode.
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
run dir = ${v.dir}/run
admin socket = ${v.dir}/run/$name.$pid.asok
pid file = ${v.dir}/run/$name.pid
log file = ${v.dir}/log/$name.log
mon cluster log file = ${v.dir}/log/cluster.log
crash dir = ${v.dir}/crash
keyring = ${v.dir}/keyring
# One OSD: one copy of everything, few PGs, no autoscaler (there is no mgr to run it).
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
osd crush chooseleaf type = 0
# The temp directory's disk may be fuller than a monitor likes; it only holds a small store.
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = memstore
memstore device bytes = ${v.memstoreBytes}

[mon.a]
mon data = ${v.dir}/mon
# Each pool radosgw creates is a map change; proposing them every 0.1 s instead of 1 s saves seconds.
paxos propose interval = 0.1

[osd.0]
osd data = ${v.dir}/osd

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${v.rgwPort}
rgw data = ${v.dir}/rgw
# Deleted objects' data is freed after 30 s, not 2 h: memstore holds it in memory.
rgw gc obj min wait = 30
rgw gc processor period = 30
`;
}

/** A cleared environment: only PATH, and HOME pointing into the cluster's directory. */
function cephEnvironment(dir: string): { env: Record<string, string>; clearEnv: true } {
  return {
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" },
    clearEnv: true,
  };
}

/** Ports the kernel says are free now (a race until bound, which a failed try covers). */
function findOnPath(name: string): string | null {
  const path = Deno.env.get("PATH") ?? "/usr/bin:/bin";
  for (const dir of path.split(":").filter(Boolean)) {
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
    } catch { /* not here */ }
  }
  return null;
}

async function logTail(path: string): Promise<string> {
  try {
    const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
    return `--- ${path} (last lines)\n${lines.slice(-8).join("\n")}`;
  } catch {
    return `--- ${path}: no log`;
  }
}

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWER = "abcdefghijklmnopqrstuvwxyz0123456789";
const MIXED = `${UPPER}abcdefghijklmnopqrstuvwxyz`;

function randomText(length: number, alphabet: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join("");
}
