/**
 * Bench workload 20: a garbage-collection sweep over 100,000 deals of which
 * 10% ended past the grace period, with the metadata in SQLite and in
 * PostgreSQL (pieces on disk both times, 1 KiB each), and what it costs the
 * retrievals served meanwhile.
 *
 * For each backend the rows are written straight into a new database and the
 * files into the data directory's shards (the setup, not measured), then the
 * server runs in this process (its sweeps are asked for with `gc.sweep()`,
 * as the tests do) while wrk, its own process, fetches a stored piece with
 * the small-piece cache off, so every answer reads the database and a file:
 *
 *   1. the expired tenth swept unpaced (--gc-rate far above what the machine
 *      does): the time of a whole sweep over the 100,000 deals, 10,000
 *      removed, and retrievals meanwhile (context);
 *   2. the next tenth made to expire, then swept at the default --gc-rate:
 *      retrievals per second in --pairs windows spread over that sweep,
 *      against as many without a sweep, half before it and half after, so
 *      the drift of a shared machine falls on both alike; the goal is a
 *      median ratio >= 0.9.
 *
 *   deno run -A scripts/bench_gc.ts [--deals 100000] [--seconds 5] [--pairs 4]
 *                                    [--connections 16] [--backends sqlite,postgres]
 *
 * Talks only to 127.0.0.1; stops what it started (wrk, PostgreSQL) by PID.
 */
import postgres from "postgres";
import { scriptArgs } from "./lib/args.ts";
import { startPostgres } from "./lib/postgres_server.ts";
import type { PostgresServer } from "./lib/postgres_server.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { DAY_MS, sleep } from "../src/kernel/clock.ts";
import type { WrkResult } from "./lib/wrk.ts";
import { loadConfig } from "../src/config/mod.ts";
import { openDatabase } from "../src/db/sqlite/database.ts";
import { PostgresDatabase } from "../src/db/postgres/postgres_database.ts";
import { silentLogger } from "../src/kernel/log.ts";
import { startServer } from "../src/server/start.ts";
import type { RunningServer } from "../src/server/start.ts";
import { shardOf } from "../src/driver/disk/layout.ts";
import type { SweepReport } from "../src/ops/gc.ts";

const PIECE_BYTES = 1024;
/** Rows written per statement or transaction while filling a database. */
const FILL_BATCH = 1000;

export interface GcBenchOptions {
  deals: number;
  /** Each measurement window. */
  seconds: number;
  /** Windows of load during the paced sweep; as many without, half before and half after. */
  pairs: number;
  connections: number;
  backends: ("sqlite" | "postgres")[];
}

export interface GcBenchBackendResult {
  deals: number;
  /** The sweep of the second tenth at the default --gc-rate: its time and what it removed. */
  paced: { ratePerSecond: number; seconds: number; removedPieces: number };
  /** The sweep of the expired tenth, unpaced: its time and what it removed. */
  unpaced: { seconds: number; removedPieces: number; piecesJudged: number };
  /** Retrievals per second in each window, in the order run. */
  baselineRps: number[];
  duringPacedSweepRps: number[];
  duringUnpacedSweep: WrkResult;
  /** Median during a paced sweep / median without (goal >= 0.9). */
  ratio: number;
  /** During the unpaced sweep / median without (context). */
  unpacedRatio: number;
}

export async function benchGc(
  options: GcBenchOptions,
): Promise<Record<string, GcBenchBackendResult> | { skipped: string }> {
  if (!wrkAvailable()) return { skipped: "wrk is not installed" };
  const results: Record<string, GcBenchBackendResult> = {};
  for (const backend of options.backends) {
    const dir = await Deno.makeTempDir({ prefix: `bench-gc-${backend}-` });
    let pg: PostgresServer | null = null;
    try {
      if (backend === "postgres") pg = await startPostgres({ durable: true });
      results[backend] = await benchBackend(options, dir, pg);
    } finally {
      await pg?.[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
  return results;
}

async function benchBackend(
  options: GcBenchOptions,
  dataDir: string,
  pg: PostgresServer | null,
): Promise<GcBenchBackendResult> {
  const now = Date.now();
  const rows = dealRows(options.deals, now);
  await writePieceFiles(dataDir, rows);
  if (pg === null) fillSqlite(`${dataDir}/storage.db`, rows);
  else await fillPostgres(pg.url, rows);
  const args = [
    "--data-dir",
    dataDir,
    "--port",
    "0",
    "--small-piece-cache",
    "0",
    "--log-requests",
    "false",
    "--gc-interval",
    "0",
    "--sponsored-term-days",
    "30",
    ...(Deno.env.get("BENCH_GC_RATE") ? ["--gc-rate", Deno.env.get("BENCH_GC_RATE")!] : []),
    ...(pg === null ? [] : ["--database", pg.url]),
  ];
  const loaded = loadConfig(args, {});
  if (loaded.kind !== "config") throw new Error("unexpected --help");
  const server = await startServer({ config: loaded.config, logger: silentLogger });
  try {
    // A piece no sweep touches: the last one, whose deal runs for months.
    const url = `${server.url}/p/${rows.at(-1)!.cid}`;
    const load = () => runWrk({ url, connections: options.connections, seconds: options.seconds });
    await runWrk({ url, connections: options.connections, seconds: 2 }); // warm-up
    const unpaced = await sweepDuring(server, load);
    await expireNextTenth(dataDir, pg, rows, now);
    // Baselines before and after the paced sweep, load windows spread over it.
    const baselineRps: number[] = [];
    for (let i = 0; i < options.pairs / 2; i++) baselineRps.push((await load()).requestsPerSecond);
    const paced = await pacedSweep(server, load, {
      ...options,
      ratePerSecond: loaded.config.gcRemovalsPerSecond,
    });
    for (let i = 0; i < options.pairs / 2; i++) baselineRps.push((await load()).requestsPerSecond);
    const duringRps = paced.windows;
    const baseline = median(baselineRps);
    return {
      deals: options.deals,
      paced: {
        ratePerSecond: loaded.config.gcRemovalsPerSecond,
        seconds: paced.report.seconds,
        removedPieces: paced.report.removedPieces,
      },
      unpaced: {
        seconds: unpaced.report.seconds,
        removedPieces: unpaced.report.removedPieces,
        piecesJudged: unpaced.report.pieces,
      },
      baselineRps,
      duringPacedSweepRps: duringRps,
      duringUnpacedSweep: unpaced.load,
      ratio: round(median(duringRps) / baseline),
      unpacedRatio: round(unpaced.load.requestsPerSecond / baseline),
    };
  } finally {
    await server.shutdown();
  }
}

/**
 * A whole sweep at the configured rate, with --pairs windows of load spread
 * over it: one at its start, the others after equal pauses (a paced sweep of
 * 10,000 pieces at 100/s lasts about 100 s), so the windows see all of it.
 */
async function pacedSweep(
  server: RunningServer,
  load: () => Promise<WrkResult>,
  options: GcBenchOptions & { ratePerSecond: number },
): Promise<{ report: SweepReport; windows: number[] }> {
  const sweep = server.gc.sweep();
  const expectedMs = (options.deals / 10) / options.ratePerSecond * 1000;
  const gapMs = Math.max(0, expectedMs / options.pairs - options.seconds * 1000);
  const windows: number[] = [];
  let done = false;
  sweep.finally(() => done = true).catch(() => {});
  for (let i = 0; i < options.pairs && !done; i++) {
    windows.push((await load()).requestsPerSecond);
    if (i < options.pairs - 1) await Promise.race([sweep, sleep(gapMs)]).catch(() => {});
  }
  const report = await sweep;
  if (report === null) throw new Error("another sweep held the turn");
  return { report, windows };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** An unpaced sweep and the load at once; the load starts with the sweep. */
async function sweepDuring(
  server: RunningServer,
  load: () => Promise<WrkResult>,
): Promise<{ report: SweepReport; load: WrkResult }> {
  const sweep = server.gc.sweep({ removalsPerSecond: 1e9 });
  const [report, result] = await Promise.all([sweep, load()]);
  if (report === null) throw new Error("another sweep held the turn");
  return { report, load: result };
}

interface DealRow {
  cid: string;
  id: string;
  termEndsAt: string;
}

/** Deal n on piece n; every tenth one ended 30 days ago (past the 7-day grace), the rest run. */
function dealRows(count: number, now: number): DealRow[] {
  const iso = (ms: number) =>
    new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
  return Array.from({ length: count }, (_, n) => ({
    cid: `bafkbenchgc${String(n).padStart(7, "0")}`,
    id: `stage-benchgc${String(n).padStart(7, "0")}`,
    termEndsAt: n % 10 === 0 ? iso(now - 30 * DAY_MS) : iso(now + 300 * DAY_MS),
  }));
}

/** The deals of the next tenth (n % 10 === 1) end 30 days ago too. */
async function expireNextTenth(
  dataDir: string,
  pg: PostgresServer | null,
  rows: DealRow[],
  now: number,
): Promise<void> {
  const ended = new Date(Math.floor((now - 30 * DAY_MS) / 1000) * 1000).toISOString()
    .replace(".000Z", "Z");
  const ids = rows.filter((_, n) => n % 10 === 1).map((row) => row.id);
  if (pg === null) {
    // A second connection beside the server's: WAL lets it write while the server reads.
    const db = openDatabase({ path: `${dataDir}/storage.db` });
    try {
      const update = db.prepare("UPDATE deals SET term_ends_at = ? WHERE id = ?");
      db.exec("BEGIN IMMEDIATE");
      for (const id of ids) update.run(ended, id);
      db.exec("COMMIT");
    } finally {
      db.close();
    }
    return;
  }
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    await sql`UPDATE deals SET term_ends_at = ${ended} WHERE id IN ${sql(ids)}`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function writePieceFiles(dataDir: string, rows: DealRow[]): Promise<void> {
  const bytes = new Uint8Array(PIECE_BYTES).fill(7);
  const made = new Set<string>();
  for (const { cid } of rows) {
    const shard = `${dataDir}/pieces/${shardOf(cid)}`;
    if (!made.has(shard)) {
      await Deno.mkdir(shard, { recursive: true });
      made.add(shard);
    }
    await Deno.writeFile(`${shard}/${cid}`, bytes);
  }
}

function fillSqlite(path: string, rows: DealRow[]): void {
  const db = openDatabase({ path });
  try {
    const piece = db.prepare(
      `INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at)
       VALUES (?, ?, NULL, 'application/octet-stream', NULL, '2026-01-01T00:00:00Z')`,
    );
    const deal = db.prepare(
      `INSERT INTO deals (id, cid, tier, owner_sub, owner, size, content_type, filename,
                          term_days, created_at, term_ends_at)
       VALUES (?, ?, 'sponsored', NULL, NULL, ?, 'application/octet-stream', NULL, 30,
               '2026-01-01T00:00:00Z', ?)`,
    );
    db.exec("BEGIN");
    for (const row of rows) {
      piece.run(row.cid, PIECE_BYTES);
      deal.run(row.id, row.cid, PIECE_BYTES, row.termEndsAt);
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

async function fillPostgres(url: string, rows: DealRow[]): Promise<void> {
  // The schema, as an instance makes it at its start.
  const schema = await PostgresDatabase.open({ url, logger: silentLogger });
  await schema.close();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    for (let i = 0; i < rows.length; i += FILL_BATCH) {
      const batch = rows.slice(i, i + FILL_BATCH);
      await sql.begin(async (tx) => {
        await tx`INSERT INTO pieces ${
          tx(batch.map((r) => ({
            cid: r.cid,
            size: PIECE_BYTES,
            content_type: "application/octet-stream",
            created_at: "2026-01-01T00:00:00Z",
          })))
        }`;
        await tx`INSERT INTO deals ${
          tx(batch.map((r) => ({
            id: r.id,
            cid: r.cid,
            tier: "sponsored",
            size: PIECE_BYTES,
            content_type: "application/octet-stream",
            term_days: 30,
            created_at: "2026-01-01T00:00:00Z",
            term_ends_at: r.termEndsAt,
          })))
        }`;
      });
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (import.meta.main) {
  const opts = scriptArgs(
    "Usage: deno run -A scripts/bench_gc.ts [--deals 100000] [--seconds 5] [--pairs 4] " +
      "[--connections 16] [--backends sqlite,postgres]",
    {
      deals: { type: "number", default: 100_000, integer: true, min: 100 },
      seconds: { type: "number", default: 5, integer: true, min: 1 },
      pairs: { type: "number", default: 4, integer: true, min: 1 },
      connections: { type: "number", default: 16, integer: true, min: 1 },
      backends: { type: "string", default: "sqlite,postgres" },
    },
  );
  const result = await benchGc({
    deals: opts.deals,
    seconds: opts.seconds,
    pairs: opts.pairs,
    connections: opts.connections,
    backends: opts.backends.split(",") as GcBenchOptions["backends"],
  });
  console.log(JSON.stringify(result, null, 2));
}
