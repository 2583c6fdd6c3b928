/**
 * The service's PostgreSQL client layer (src/db/postgres/connection.ts over
 * node-postgres) against a real server: what the records rely on (values sent
 * as parameters, fragments, BIGINT as numbers, transactions), and what keeps
 * an instance up when the database misbehaves: a statement on a hung server
 * fails at its deadline and the database is then judged offline (calls fail
 * at once) until it answers again; a connection whose backend is killed while
 * checked out is no uncaught error; a cid lock lost with its connection says
 * so, and the lock is free for another instance; a URL naming a host that
 * refuses and one that answers uses the one that answers.
 */
import { assertEquals, assertOk, assertRejects } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import { postgresAvailable, postgresClient, postgresTest } from "../helpers/postgres.ts";
import { startPostgres } from "../../scripts/lib/postgres_server.ts";
import { postgresFaults } from "../../scripts/lib/postgres_faults.ts";
import { Liveness } from "../../src/kernel/liveness.ts";
import { databaseProbe, PostgresPool } from "../../src/db/postgres/connection.ts";
import { PostgresDatabase } from "../../src/db/postgres/postgres_database.ts";
import { DatabaseUnavailableError } from "../../src/db/postgres/unavailable.ts";
import { silentLogger } from "../../src/kernel/log.ts";

const ignore = !postgresAvailable();

function poolOf(url: string, timeoutMs = 2000): PostgresPool & AsyncDisposable {
  const liveness = new Liveness({
    where: "the test database",
    probe: databaseProbe(url),
    failure: (message) => new DatabaseUnavailableError(message),
  });
  const pool = new PostgresPool({ url, max: 4, timeoutMs, liveness });
  return Object.assign(pool, { [Symbol.asyncDispose]: () => pool.end() });
}

postgresTest(
  "postgres client: parameters, fragments, BIGINT as numbers, counts, transactions",
  async (db) => {
    await using pool = poolOf(db.url);
    const { sql } = pool;
    await sql`CREATE TABLE t (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)`;
    const rows = [{ id: "a", n: 2 ** 40, note: "'; DROP TABLE t; --" }, {
      id: "b",
      n: 1,
      note: null,
    }];
    await sql`INSERT INTO t ${sql.values(rows, ["id", "n", "note"])}`;
    const found = await sql`SELECT id, n, note FROM t WHERE id IN ${
      sql.list(["a", "b"])
    } ORDER BY id`;
    assertEquals([...found], rows);
    assertEquals((await sql`UPDATE t SET n = n + ${1} WHERE n < ${100}`).count, 1);
    const total = await sql.begin(async (tx) => {
      await tx`INSERT INTO t (id, n) VALUES (${"c"}, ${3})`;
      const [row] = await tx.unsafe("SELECT count(*) AS n FROM t WHERE id <> $1", ["a"]);
      return row.n;
    });
    assertEquals(total, 2);
    await assertRejects(() =>
      sql.begin(async (tx) => {
        await tx`INSERT INTO t (id, n) VALUES ('d', 4)`;
        await tx`INSERT INTO t (id, n) VALUES ('d', 4)`; // a unique violation: a plain SQL error
      }), /duplicate key/);
    assertEquals((await sql`SELECT id FROM t ORDER BY id`).map((r) => r.id), ["a", "b", "c"]);
  },
);

Deno.test({
  name: "postgres client: a hung server fails calls at the deadline, then at once, then recovers",
  ignore,
  async fn() {
    await using server = await startPostgres({ durable: false });
    await using pool = poolOf(server.url, 1000);
    assertEquals((await pool.sql`SELECT 1 AS one`)[0].one, 1);
    const faults = postgresFaults(server);
    faults.pause();
    try {
      const started = performance.now();
      const error = await pool.sql`SELECT 1`.catch((error) => error);
      assertOk(error instanceof DatabaseUnavailableError, String(error));
      assertOk(performance.now() - started < 5000, `${performance.now() - started} ms`);
      // Judged offline now (a probe got no answer): the next call fails without waiting.
      await eventually(
        async () => {
          const at = performance.now();
          const next = await pool.sql`SELECT 1`.catch((error) => error);
          return next instanceof DatabaseUnavailableError && performance.now() - at < 100;
        },
        "a call fails at once while the database is offline",
        { timeoutMs: 10_000 },
      );
    } finally {
      faults.resume();
    }
    await eventually(
      async () => await pool.sql`SELECT 1`.then(() => true, () => false),
      "answers again",
      { timeoutMs: 10_000, intervalMs: 200 },
    );
  },
});

postgresTest(
  "postgres client: a backend killed under a checked-out connection is no uncaught error",
  async (db) => {
    await using pool = poolOf(db.url);
    // A role may end its own backends.
    await using admin = postgresClient(db.url, { max: 1 });
    const checkout = await pool.checkout();
    try {
      const [{ pid }] = await checkout.query("SELECT pg_backend_pid() AS pid", [], 2000);
      await admin`SELECT pg_terminate_backend(${pid as number})`;
      await eventually(() => checkout.lost.aborted, "the checkout hears its connection die");
      const error = await checkout.query("SELECT 1", [], 2000).catch((error) => error);
      assertOk(error instanceof DatabaseUnavailableError, String(error));
    } finally {
      checkout.release();
    }
    assertEquals((await pool.sql`SELECT 2 AS two`)[0].two, 2, "the pool goes on");
  },
);

postgresTest(
  "postgres client: a cid lock lost with its connection says so; the lock is free again",
  async (db) => {
    const open = () => PostgresDatabase.open({ url: db.url, logger: silentLogger });
    const [a, b] = [await open(), await open()];
    try {
      await using admin = postgresClient(db.url, { max: 1 });
      let lost: AbortSignal | null = null;
      await a.cidLocks.run("bafklostlock", async (lockLost) => {
        lost = lockLost;
        // Kill the backend holding the advisory lock (the lock pool's session).
        await admin`SELECT pg_terminate_backend(pid) FROM pg_locks
        WHERE locktype = 'advisory' AND granted`;
        await eventually(() => lockLost.aborted, "the holder hears the lock go");
      });
      assertOk(lost!.aborted);
      let entered = false;
      await b.cidLocks.run("bafklostlock", () => Promise.resolve(entered = true));
      assertOk(entered, "another instance takes the lock");
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  },
);

postgresTest("postgres client: of two hosts, a refusing one is passed over", async (db) => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusing = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const url = new URL(db.url);
  const twoHosts = db.url.replace(`@${url.host}/`, `@127.0.0.1:${refusing},${url.host}/`);
  await using pool = poolOf(twoHosts);
  await eventually(
    async () => await pool.sql`SELECT 1`.then(() => true, () => false),
    "a connection to the host that answers",
    { timeoutMs: 10_000, intervalMs: 100 },
  );
});
