/**
 * deno task bench-faults — what one failure of the shared backends does to a
 * scale-out deployment (docs/scale-out.md reports the figures).
 *
 * For each fault, a fresh deployment: PostgreSQL (durable, as in production;
 * a streaming standby beside it for the failover), one bucket on a local
 * Ceph radosgw, and two instances of main.ts with the start task's
 * permissions and default settings; a steady upload and retrieval load
 * through both (scripts/lib/fault_load.ts); then, after a warm-up, the fault:
 *
 *   pg-restart       pg_ctl restart -m fast
 *   pg-stopped       PostgreSQL stopped for --fault-seconds, then started
 *   pg-failover      the primary stopped, the standby promoted (the URL names both)
 *   bucket-silent    the S3 gateway SIGSTOPped for --fault-seconds
 *   bucket-refusing  the S3 gateway stopped (connections refused) for --fault-seconds
 *
 * Per fault: instances that exited (goal 0); requests over 2 s outside the
 * fault window plus 2 s (goal 0); the share of requests during the fault
 * answered 503 with Retry-After; time to full recovery after it (goal
 * < 5 s); acknowledged uploads lost (goal 0); objects left in the bucket
 * that no row names once the leftover sweep has run (goal 0).
 *
 * Talks only to 127.0.0.1, bounds every wait, and stops what it started, by
 * PID. Prints a table and writes bench-results/faults-latest.json.
 *
 *   deno task bench-faults [--faults pg-restart,bucket-silent] [--fault-seconds 30]
 *                          [--warmup 10] [--after 20] [--workers 4]
 */
import postgres from "postgres";
import { scriptArgs, usageExit } from "./lib/args.ts";
import { FaultLoad, patternBytes } from "./lib/fault_load.ts";
import { faultFigures, GRACE_MS } from "./lib/fault_metrics.ts";
import type { FaultFigures, FaultWindow } from "./lib/fault_metrics.ts";
import { multiHostUrl, postgresFaults, startStandby } from "./lib/postgres_faults.ts";
import { startPostgres } from "./lib/postgres_server.ts";
import type { PostgresServer } from "./lib/postgres_server.ts";
import { startRadosgw } from "./lib/radosgw.ts";
import type { RadosgwCluster } from "./lib/radosgw.ts";
import { spawnServer } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { S3Client } from "../src/driver/s3/s3_client.ts";
import { listMultipartUploads, listObjects } from "../src/driver/s3/object_listing.ts";

const FAULTS = ["pg-restart", "pg-stopped", "pg-failover", "bucket-silent", "bucket-refusing"];
type Fault = typeof FAULTS[number];

const USAGE = `Usage: deno task bench-faults [--faults ${FAULTS.join(",")}]
       [--fault-seconds 30] [--warmup 10] [--after 20] [--workers 4]`;
const opts = scriptArgs(USAGE, {
  faults: { type: "string", default: FAULTS.join(",") },
  "fault-seconds": { type: "number", default: 30, min: 1 },
  warmup: { type: "number", default: 10, min: 1 },
  after: { type: "number", default: 20, min: 5 },
  workers: { type: "number", default: 4, integer: true, min: 1 },
});
const chosen = opts.faults.split(",").map((name) => name.trim());
for (const name of chosen) {
  if (!FAULTS.includes(name)) usageExit(USAGE, `--faults: no fault "${name}"`);
}
/** The leftover sweep runs every 30 s: a minute and a half is two of them, with room. */
const CLEANUP_WAIT_MS = 90_000;

interface Deployment {
  primary: PostgresServer;
  standby: PostgresServer | null;
  /** The database the instances use (after a failover: the promoted standby). */
  current: PostgresServer;
  bucket: { client: S3Client; name: string };
  instances: SpawnedServer[];
  dirs: string[];
}

interface FaultResult extends FaultFigures {
  fault: Fault;
  windowMs: number;
  instancesExited: number;
  acknowledged: number;
  acknowledgedLost: number;
  leftoverObjects: number;
  leftoverNames: string[];
}

const log = (line: string) => console.error(`[bench-faults] ${line}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  log("starting a Ceph radosgw cluster (10-20 s)");
  const cluster = await startRadosgw({ onProgress: (line) => log(line) });
  const results: FaultResult[] = [];
  try {
    for (const fault of chosen) {
      log(`${fault}: deploying`);
      results.push(await runFault(cluster, fault));
      log(`${fault}: ${JSON.stringify(results.at(-1))}`);
    }
  } finally {
    await cluster.stop();
  }
  printTable(results);
  await Deno.mkdir("bench-results", { recursive: true });
  await Deno.writeTextFile(
    "bench-results/faults-latest.json",
    JSON.stringify({ at: new Date().toISOString(), options: opts, results }, null, 2),
  );
}

async function runFault(cluster: RadosgwCluster, fault: Fault): Promise<FaultResult> {
  const deployment = await deploy(cluster, fault === "pg-failover");
  try {
    const load = new FaultLoad({
      urls: deployment.instances.map((instance) => instance.url),
      workers: opts.workers,
      pauseMs: 20,
      requestTimeoutMs: 120_000,
    });
    load.start();
    await sleep(opts.warmup * 1000);
    const window: FaultWindow = { start: Date.now(), end: 0 };
    await inject(fault, deployment, cluster);
    window.end = Date.now();
    await sleep(opts.after * 1000);
    await load.stop();
    const exited = await exitedInstances(deployment.instances);
    const lost = await lostUploads(deployment, load);
    const leftovers = await leftoversAfterSweep(deployment);
    return {
      fault,
      windowMs: window.end - window.start,
      ...faultFigures(load.records, window),
      instancesExited: exited,
      acknowledged: load.acknowledged.length,
      acknowledgedLost: lost,
      leftoverObjects: leftovers.length,
      leftoverNames: leftovers.slice(0, 10),
    };
  } finally {
    await teardown(deployment);
  }
}

async function inject(fault: Fault, deployment: Deployment, cluster: RadosgwCluster) {
  const seconds = opts["fault-seconds"] * 1000;
  const database = postgresFaults(deployment.primary);
  switch (fault) {
    case "pg-restart":
      return await database.restart("fast");
    case "pg-stopped":
      await database.stop("fast");
      await sleep(seconds);
      return await database.start();
    case "pg-failover":
      await database.stop("fast");
      await postgresFaults(deployment.standby!).promote();
      deployment.current = deployment.standby!;
      return;
    case "bucket-silent":
      cluster.gateway.pause();
      await sleep(seconds);
      return cluster.gateway.resume();
    case "bucket-refusing":
      await cluster.gateway.stop();
      await sleep(seconds);
      return await cluster.gateway.start();
  }
}

async function deploy(cluster: RadosgwCluster, withStandby: boolean): Promise<Deployment> {
  const primary = await startPostgres();
  const standby = withStandby ? await startStandby(primary) : null;
  const s3 = {
    endpoint: cluster.endpoint,
    region: cluster.region,
    accessKeyId: cluster.accessKeyId,
    secretAccessKey: cluster.secretAccessKey,
  };
  const name = `faults-${crypto.randomUUID()}`;
  const client = new S3Client({ ...s3, bucket: name, requestTimeoutMs: 30_000 });
  await client.text({ method: "PUT" });
  const url = standby ? multiHostUrl(primary, standby) : primary.url;
  const args = [
    "--database",
    url,
    "--store",
    "s3",
    "--s3-endpoint",
    s3.endpoint,
    "--s3-bucket",
    name,
    "--s3-region",
    s3.region,
    "--log-requests",
    "false",
  ];
  const env = {
    STORAGE_S3_ACCESS_KEY_ID: s3.accessKeyId,
    STORAGE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  const dirs = await Promise.all([0, 1].map(() => Deno.makeTempDir({ prefix: "bench-faults-" })));
  const instances: SpawnedServer[] = [];
  for (const dir of dirs) instances.push(await spawnServer(dir, args, { env }));
  return {
    primary,
    standby,
    current: primary,
    bucket: { client, name },
    instances,
    dirs,
  };
}

/** Instances whose process has ended (it must not have). */
async function exitedInstances(instances: SpawnedServer[]): Promise<number> {
  const settled = await Promise.all(
    instances.map((i) => Promise.race([i.exited.then(() => true), sleep(100).then(() => false)])),
  );
  return settled.filter(Boolean).length;
}

/** Acknowledged uploads not served byte-identical (503s retried for a while, as clients do). */
async function lostUploads(deployment: Deployment, load: FaultLoad): Promise<number> {
  let lost = 0;
  for (const [i, piece] of load.acknowledged.entries()) {
    const url = deployment.instances[i % 2].url;
    let response: Response | null = null;
    for (const until = Date.now() + 15_000; Date.now() < until;) {
      response = await fetch(`${url}/p/${piece.cid}`).catch(() => null);
      if (response?.status !== 503) break;
      await response.body?.cancel();
      await sleep(200);
    }
    const bytes = response?.status === 200 ? new Uint8Array(await response.arrayBuffer()) : null;
    if (!bytes || !same(bytes, patternBytes(piece.size, piece.seed))) {
      lost++;
      await response?.body?.cancel().catch(() => {});
    }
  }
  return lost;
}

/** Staging leftovers and pieces no row names, once the sweep has had its chance. */
async function leftoversAfterSweep(deployment: Deployment): Promise<string[]> {
  const sql = postgres(deployment.current.url, { max: 1, onnotice: () => {} });
  try {
    let left: string[] = [];
    for (const until = Date.now() + CLEANUP_WAIT_MS; Date.now() < until; await sleep(2000)) {
      left = await leftovers(deployment, sql);
      if (left.length === 0) break;
    }
    return left;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function leftovers(deployment: Deployment, sql: postgres.Sql): Promise<string[]> {
  const { client } = deployment.bucket;
  const rows = new Set((await sql`SELECT cid FROM pieces`).map((row) => `pieces/${row.cid}`));
  const left: string[] = [];
  for await (const upload of listMultipartUploads(client, "staging/")) left.push(upload.key);
  for await (const object of listObjects(client, "staging/")) left.push(object.key);
  for await (const object of listObjects(client, "pieces/")) {
    if (!rows.has(object.key)) left.push(object.key);
  }
  return left;
}

async function teardown(deployment: Deployment): Promise<void> {
  for (const instance of deployment.instances) await instance[Symbol.asyncDispose]();
  await deployment.standby?.stop();
  await deployment.primary.stop();
  for (const dir of deployment.dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function printTable(results: FaultResult[]): void {
  const mark = (ok: boolean) => ok ? "✓" : "✗";
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const pct = (share: number) => `${Math.round(share * 1000) / 10} %`;
  const head = [
    "fault",
    "window",
    "instances exited",
    `requests > 2 s outside window + ${GRACE_MS / 1000} s`,
    "during: 503 + Retry-After / 200 / other",
    "slowest",
    "recovery",
    "acknowledged lost",
    "left in bucket",
  ];
  console.log(`| ${head.join(" | ")} |`);
  console.log(`|${"---|".repeat(head.length)}`);
  for (const r of results) {
    const d = r.during;
    const cells = [
      r.fault,
      seconds(r.windowMs),
      `${r.instancesExited} ${mark(r.instancesExited === 0)}`,
      `${r.slowOutside} of ${r.requests} ${mark(r.slowOutside === 0)}`,
      `${pct(d.offlineShare)} / ${pct(d.okShare)} / ${pct(d.otherShare)} of ${d.requests}`,
      seconds(r.slowestMs),
      `${seconds(r.recoveryMs)} ${mark(r.recoveryMs < 5000)}`,
      `${r.acknowledgedLost} of ${r.acknowledged} ${mark(r.acknowledgedLost === 0)}`,
      `${r.leftoverObjects} ${mark(r.leftoverObjects === 0)}`,
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
}

if (import.meta.main) await main();
