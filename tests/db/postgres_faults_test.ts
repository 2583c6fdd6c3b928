/**
 * PostgreSQL failing under two running instances (PostgreSQL + one S3
 * bucket), with a steady upload and retrieval load through both
 * (scripts/lib/fault_load.ts): a restart (fast, and immediate, which is a
 * crash and a recovery), the server stopped until the instances report it,
 * the server hung (SIGSTOP) until they report it, and a failover to a
 * promoted standby with the URL naming both hosts. In each:
 *
 *   - no instance ends (an uncaught error would fail this test process);
 *   - every request is answered 200, or 503 with Retry-After, within its
 *     deadline (a few --db-timeout, here 2 s): never a hang, never a 500;
 *   - the instances come back by themselves once the database does;
 *   - every upload answered 200 is served byte-identical afterwards;
 *   - once the leftover sweep has run, nothing is under staging/ and every
 *     object under pieces/ is named by a row.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import type { TestServer } from "../helpers/server.ts";
import { postgresClient } from "../helpers/postgres.ts";
import { objectKeys, uploadKeys } from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";
import { startPostgres } from "../../scripts/lib/postgres_server.ts";
import type { PostgresServer } from "../../scripts/lib/postgres_server.ts";
import { multiHostUrl, postgresFaults, startStandby } from "../../scripts/lib/postgres_faults.ts";
import { FaultLoad, patternBytes } from "../../scripts/lib/fault_load.ts";

const ignore = !scaleOutAvailable();
const DB_TIMEOUT_S = 2;
/** Longest any request may take: a few database calls, each within --db-timeout. */
const REQUEST_DEADLINE_MS = 6 * DB_TIMEOUT_S * 1000;

interface Deployment {
  /** The database the instances write to now (after a failover: the promoted standby). */
  database: () => PostgresServer;
  s3: TestBucket;
  instances: TestServer[];
  load: FaultLoad;
}

/** fsync off is fine (only the postmaster crashes here); a commit must be a commit. */
const SERVER_SETTINGS = { synchronous_commit: "on" };

async function withDeployment(
  options: { standby: boolean },
  fault: (
    deployment: Deployment & { primary: PostgresServer; standby: PostgresServer | null },
  ) => Promise<void>,
): Promise<void> {
  await using primary = await startPostgres({ durable: false, settings: SERVER_SETTINGS });
  const standby = options.standby ? await startStandby(primary) : null;
  let current = primary;
  try {
    await using scaleOut = await scaleOutForTests({
      databaseUrl: standby ? multiHostUrl(primary, standby) : primary.url,
      args: ["--db-timeout", String(DB_TIMEOUT_S), "--log-requests", "false"],
    });
    const { s3 } = scaleOut;
    const start = () => scaleOut.startInstance({ jobIntervals: { "leftover-sweep": 500 } });
    await using a = await start();
    await using b = await start();
    const load = new FaultLoad({ urls: [a.url, b.url], requestTimeoutMs: 60_000 });
    const deployment = { database: () => current, s3, instances: [a, b], load };
    load.start();
    try {
      await eventually(() => load.acknowledged.length >= 20, "uploads before the fault", {
        timeoutMs: 30_000,
      });
      await fault({ ...deployment, primary, standby });
      if (standby) current = standby;
      const back = Date.now();
      await eventually(
        () =>
          [a, b].every((i) => load.since(back).some((r) => r.url === i.url && r.status === 200)),
        "both instances answer 200 again",
        { timeoutMs: 60_000, intervalMs: 50 },
      );
    } finally {
      await load.stop();
    }
    await assertSound(deployment);
  } finally {
    await standby?.stop();
  }
}

/** What must hold after any fault (see the header). */
async function assertSound(deployment: Deployment): Promise<void> {
  const { load, instances, s3 } = deployment;
  const bad = load.records.filter((r) =>
    !(r.status === 200 || (r.status === 503 && r.retryAfter)) || r.ms > REQUEST_DEADLINE_MS ||
    r.intact === false
  );
  assertEquals(bad.slice(0, 5), [], `${bad.length} of ${load.records.length} requests`);
  assertOk(load.records.some((r) => r.status === 503), "the fault was seen (some 503)");
  for (const instance of instances) {
    assertEquals(instance.logs.filter((line) => line.msg === "unhandled error"), []);
  }
  // Every acknowledged upload, byte-identical. The database was just judged down: for
  // up to a second or so after it is back, a request may still be answered 503 + Retry-After
  // (the next probe has not run yet), which a client retries.
  for (const [i, piece] of load.acknowledged.entries()) {
    let response: Response | null = null;
    await eventually(
      async () => {
        await response?.body?.cancel();
        response = await instances[i % 2].get(`/p/${piece.cid}`);
        return response.status !== 503;
      },
      `GET ${piece.cid} answered`,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    assertEquals(response!.status, 200, piece.cid);
    assertEquals(
      new Uint8Array(await response!.arrayBuffer()),
      patternBytes(piece.size, piece.seed),
    );
  }
  await using sql = postgresClient(deployment.database().url, { max: 1 });
  let left: string[] = [];
  await eventually(
    async () => {
      const rows = new Set((await sql`SELECT cid FROM pieces`).map((row) => `pieces/${row.cid}`));
      left = [
        ...await uploadKeys(s3, "staging/"),
        ...await objectKeys(s3, "staging/"),
        ...(await objectKeys(s3, "pieces/")).filter((key) => !rows.has(key)),
      ];
      return left.length === 0;
    },
    "no leftovers once swept",
    { timeoutMs: 30_000, intervalMs: 250 },
  ).catch((error) => {
    throw new Error(`${error.message}: ${left.join(", ")}`);
  });
}

/** Waits until every instance's /healthz says the database is down. */
async function reportedDown(instances: TestServer[]): Promise<void> {
  await eventually(
    async () => {
      const healths = await Promise.all(
        instances.map(async (i) => await (await i.get("/healthz")).json()),
      );
      return healths.every((health) => health.database.ok === false);
    },
    "/healthz reports the database down",
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

function pgTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name: `postgres fault: ${name}`, ignore, fn });
}

pgTest(
  "a fast restart under load",
  () =>
    withDeployment({ standby: false }, async ({ primary }) => {
      await postgresFaults(primary).restart("fast");
    }),
);

pgTest(
  "an immediate restart (a crash and recovery) under load",
  () =>
    withDeployment({ standby: false }, async ({ primary }) => {
      await postgresFaults(primary).restart("immediate");
    }),
);

pgTest(
  "stopped until the instances report it, then started",
  () =>
    withDeployment({ standby: false }, async ({ primary, instances, load }) => {
      const faults = postgresFaults(primary);
      await faults.stop();
      const stopped = Date.now();
      await reportedDown(instances);
      await eventually(
        () => load.since(stopped).some((r) => r.status === 503),
        "503 while stopped",
      );
      await faults.start();
    }),
);

pgTest(
  "hung (SIGSTOP) until the instances report it, then let go",
  () =>
    withDeployment({ standby: false }, async ({ primary, instances, load }) => {
      const faults = postgresFaults(primary);
      faults.pause();
      try {
        const paused = Date.now();
        await reportedDown(instances);
        await eventually(
          () => load.since(paused).some((r) => r.status === 503),
          "503 while hung",
          { timeoutMs: 30_000 },
        );
      } finally {
        faults.resume();
      }
    }),
);

pgTest(
  "failover to a promoted standby, the URL naming both hosts",
  () =>
    withDeployment({ standby: true }, async ({ primary, standby }) => {
      // A clean stop sends the standby every committed transaction first.
      await postgresFaults(primary).stop("fast");
      await postgresFaults(standby!).promote();
    }),
);
