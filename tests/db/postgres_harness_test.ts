/**
 * The PostgreSQL harness (scripts/lib/postgres_server.ts, tests/helpers/postgres.ts) and the
 * tests' own client, postgres.js, under Deno: a real server is started, used and stopped, and
 * each behaviour the tests rely on is asserted, so a bump of PostgreSQL, postgres.js or Deno that
 * changes one fails here first. (The service itself runs on node-postgres since postgres.js
 * could not survive its database restarting: tests/db/postgres_client_test.ts; postgres.js stays
 * as an independent client for tests, whose connections are short-lived.)
 *
 * Known postgres.js 3.4.9 defects these tests step around (open upstream, porsager/postgres
 * #1066, #1154, #1208, #1130): once a connection is lost, a query sent on the same client can
 * throw an uncaught TypeError from a setImmediate (`socket.write` on null; it ends the process,
 * and on a reserved connection whose backend died it always happens) or, under Deno, whose
 * net.Socket emits 'close' a macrotask after 'error', never settle; and sql.end() then waits
 * for its whole timeout (forever without one). So a client that has seen its connection die
 * is only ended here, with a short timeout, never queried again.
 *
 * Without PostgreSQL the tests are ignored, except in CI (CI=true), where it must be installed;
 * the PostgresUnavailableError test runs everywhere.
 */
import { existsSync, withTempDir } from "../helpers/files.ts";
import postgres from "postgres";
import {
  PostgresUnavailableError,
  processRunning,
  startPostgres,
} from "../../scripts/lib/postgres_server.ts";
import {
  postgresAvailable,
  postgresClient,
  postgresForTests,
  postgresTest,
} from "../helpers/postgres.ts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { eventually, within } from "../helpers/wait.ts";

const ignore = !postgresAvailable();

/** The codes postgres.js gives a query whose connection went away, by how the loss was seen. */
const CONNECTION_LOST = ["CONNECTION_CLOSED", "ECONNRESET", "EPIPE", "57P01"];

/** The error `promise` rejects with; fails if it resolves or has not settled within ms. */
async function rejection(promise: Promise<unknown>, ms: number, what: string): Promise<Error> {
  const outcome = await within(
    promise.then(() => null, (error: Error) => error),
    ms,
    what,
  );
  assertOk(outcome instanceof Error, `${what}: resolved, expected a rejection`);
  return outcome;
}

function codeOf(error: Error): unknown {
  return (error as Error & { code?: unknown }).code;
}

function parentOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}

// ---------------------------------------------------------------------------------------------
// The server

Deno.test({
  name: "postgres: startPostgres() without the binaries fails with PostgresUnavailableError",
  async fn() {
    await withTempDir("no-postgres-", async (emptyBinDir) => {
      const error = await rejection(startPostgres({ binDir: emptyBinDir }), 5_000, "start");
      assertOk(error instanceof PostgresUnavailableError, String(error));
      assertMatch(error.message, /initdb, pg_ctl, postgres, psql/);
    });
  },
});

Deno.test({
  name: "postgres: a durable server on 127.0.0.1, scram only, not run as root, gone after stop()",
  ignore,
  async fn() {
    const server = await startPostgres();
    try {
      assertMatch(server.url, /^postgres:\/\/storage:[0-9a-f]{32}@127\.0\.0\.1:\d+\/storage$/);
      assertEquals(new URL(server.url).port, String(server.port));
      const status = await Deno.readTextFile(`/proc/${server.pid}/status`);
      const realUid = Number(status.match(/^Uid:\s+(\d+)/m)?.[1]);
      assertOk(realUid !== 0, "the postmaster runs as root");

      await using admin = postgresClient(server.adminUrl, { max: 1 });
      const settings = await admin<{ name: string; setting: string }[]>`
        SELECT name, setting FROM pg_settings WHERE name IN ${
        admin([
          "fsync",
          "synchronous_commit",
          "full_page_writes",
          "listen_addresses",
          "max_connections",
          "password_encryption",
          "unix_socket_directories",
        ])
      } ORDER BY name`;
      assertEquals(Object.fromEntries(settings.map((row) => [row.name, row.setting])), {
        fsync: "on",
        full_page_writes: "on",
        listen_addresses: "127.0.0.1",
        max_connections: "100",
        password_encryption: "scram-sha-256",
        synchronous_commit: "on",
        unix_socket_directories: `${parentOf(server.dataDir)}/run`,
      });
      const methods = await admin`SELECT DISTINCT auth_method FROM pg_hba_file_rules`;
      assertEquals(methods.map((row) => row.auth_method), ["scram-sha-256"]);

      await using sql = postgresClient(server.url, { max: 1 });
      const [role] = await sql`
        SELECT current_user AS name, current_database() AS database, rolsuper, rolcreatedb
        FROM pg_roles WHERE rolname = current_user`;
      assertEquals({ ...role }, {
        name: "storage",
        database: "storage",
        rolsuper: false,
        rolcreatedb: true,
      });

      const wrongPassword = new URL(server.url);
      wrongPassword.password = "not-the-password";
      await using intruder = postgresClient(wrongPassword.href, { max: 1 });
      const refused = await rejection(intruder`SELECT 1`, 10_000, "a wrong password");
      assertEquals(codeOf(refused), "28P01"); // invalid_password
    } finally {
      await server.stop();
    }
    assertOk(!server.isRunning, `postgres (pid ${server.pid}) still runs after stop()`);
    assertOk(!existsSync(parentOf(server.dataDir)), "the temp dir outlived stop()");
    await within(server.stop(), 1_000, "a second stop()");
  },
});

Deno.test({
  name: "postgres: a server stopped under a client fails the in-flight query, and refuses new ones",
  ignore,
  async fn() {
    await using server = await startPostgres({ durable: false });
    const sql = postgresClient(server.url, { max: 1, connect_timeout: 2 });
    try {
      await sql`SELECT 1`;
      // Its outcome is taken at once: a rejection nobody handles yet would fail the test file.
      const inFlight = sql`SELECT pg_sleep(60)`.then(() => null, (error: Error) => error);
      await using admin = postgresClient(server.adminUrl, { max: 1 });
      await eventually(async () => {
        const [{ sleeping }] = await admin`
          SELECT count(*)::int AS sleeping FROM pg_stat_activity
          WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'`;
        return sleeping === 1;
      }, "the query running on the server");
      await admin.end({ timeout: 5 });

      const stopping = performance.now();
      await within(server.stop(), 10_000, "stop() under a busy client");
      const lost = await within(inFlight, 10_000, "the in-flight query");
      assertOk(lost !== null, "the query on the stopped server succeeded");
      assertOk(CONNECTION_LOST.includes(codeOf(lost) as string), `code ${codeOf(lost)}: ${lost}`);
      assertOk(performance.now() - stopping < 5_000, "the loss took seconds to be seen");
    } finally {
      // Not queried again: see the header.
      await within(sql.end({ timeout: 1 }), 5_000, "sql.end() after a lost connection");
    }

    await using fresh = postgresClient(server.url, { max: 1, connect_timeout: 2 });
    const refused = await rejection(fresh`SELECT 1`, 5_000, "a query to the stopped server");
    assertEquals(codeOf(refused), "ECONNREFUSED");
  },
});

Deno.test({
  name: "postgres: a stalled server costs a new connection connect_timeout, then CONNECT_TIMEOUT",
  ignore,
  async fn() {
    await using server = await startPostgres({ durable: false });
    Deno.kill(server.pid, "SIGSTOP"); // the kernel still accepts; nobody answers the startup
    try {
      await using sql = postgresClient(server.url, { max: 1, connect_timeout: 1 });
      const started = performance.now();
      const timedOut = await rejection(sql`SELECT 1`, 5_000, "a query to a stalled server");
      assertEquals(codeOf(timedOut), "CONNECT_TIMEOUT");
      assertOk(performance.now() - started >= 900, "CONNECT_TIMEOUT before connect_timeout");
    } finally {
      Deno.kill(server.pid, "SIGCONT");
    }
  },
});

// ---------------------------------------------------------------------------------------------
// The per-test databases

Deno.test({
  name: "postgres: two test databases on the file's server are isolated, and dropped on dispose",
  ignore,
  async fn() {
    const first = await postgresForTests();
    await using second = await postgresForTests();
    try {
      assertOk(first.name !== second.name, "the same database twice");
      assertEquals(first.server.port, second.server.port);

      await using a = postgresClient(first.url, { max: 1 });
      await using b = postgresClient(second.url, { max: 1 });
      for (const [sql, row] of [[a, "first"], [b, "second"]] as const) {
        await sql`CREATE TABLE items (name text)`;
        await sql`INSERT INTO items VALUES (${row})`;
      }
      await a`CREATE TABLE only_in_first (x int)`;
      assertEquals((await a`SELECT name FROM items`).map((row) => row.name), ["first"]);
      assertEquals((await b`SELECT name FROM items`).map((row) => row.name), ["second"]);
      const [{ found }] = await b`SELECT to_regclass('only_in_first') IS NOT NULL AS found`;
      assertEquals(found, false);
      const [{ fsync }] = await a`SELECT current_setting('fsync') AS fsync`;
      assertEquals(fsync, "off");
    } finally {
      await first[Symbol.asyncDispose]();
    }

    await using probe = postgresClient(first.url, { max: 1 });
    const gone = await rejection(probe`SELECT 1`, 5_000, "a query to a dropped database");
    assertEquals(codeOf(gone), "3D000"); // invalid_catalog_name
  },
});

Deno.test({
  name: "postgres: a test file using postgresForTests passes --trace-leaks and leaves nothing",
  ignore,
  async fn() {
    await withTempDir("postgres-helper-test-", async (dir) => {
      const testFile = `${dir}/uses_postgres_test.ts`;
      await Deno.writeTextFile(
        testFile,
        `import { postgresClient, postgresForTests } from ${
          JSON.stringify(import.meta.resolve("../helpers/postgres.ts"))
        };
Deno.test("one", async () => {
  await using db = await postgresForTests();
  await using sql = postgresClient(db.url);
  await sql\`CREATE TABLE t (x int)\`;
  console.log("SERVER " + JSON.stringify(db.server));
});
Deno.test("two", async () => {
  await using db = await postgresForTests();
  await using sql = postgresClient(db.url);
  await sql\`SELECT 1\`;
});
`,
      );
      const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
        args: [
          "test",
          "--allow-all",
          "--trace-leaks",
          "--no-check",
          "--config",
          new URL("../../deno.json", import.meta.url).pathname,
          testFile,
        ],
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
      assertEquals(code, 0, output);
      assertMatch(output, /ok \| 2 passed \| 0 failed/);
      const server = JSON.parse(output.match(/^SERVER (.*)$/m)?.[1] ?? "null");
      assertOk(server !== null, output);
      assertOk(!processRunning(server.pid), `postgres (pid ${server.pid}) outlived the test file`);
      assertOk(
        !existsSync(parentOf(server.dataDir)),
        "the server's temp dir outlived the test file",
      );
    });
  },
});

// ---------------------------------------------------------------------------------------------
// postgres.js behaviours the tests rely on

postgresTest(
  "postgres.js: sql.begin commits, and rolls back when its callback throws",
  async (db) => {
    await using sql = postgresClient(db.url);
    await sql`CREATE TABLE pieces (cid text PRIMARY KEY, size int NOT NULL)`;

    const committed = await sql.begin(async (tx) => {
      await tx`INSERT INTO pieces VALUES ('a', 1)`;
      const [{ total }] = await tx`SELECT sum(size)::int AS total FROM pieces`;
      return total;
    });
    assertEquals(committed, 1);

    const failure = await rejection(
      sql.begin(async (tx) => {
        await tx`INSERT INTO pieces VALUES ('b', 2)`;
        throw new Error("abandoned");
      }),
      5_000,
      "a transaction whose callback throws",
    );
    assertEquals(failure.message, "abandoned");
    assertEquals((await sql`SELECT cid FROM pieces ORDER BY cid`).map((row) => row.cid), ["a"]);
  },
);

postgresTest("postgres.js: a conditional UPDATE … RETURNING claims a row once", async (db) => {
  await using sql = postgresClient(db.url);
  await sql`CREATE TABLE jobs (id int PRIMARY KEY, state text NOT NULL)`;
  await sql`INSERT INTO jobs VALUES (1, 'queued')`;

  const claim = () =>
    sql<{ id: number; state: string }[]>`
      UPDATE jobs SET state = 'claimed' WHERE id = 1 AND state = 'queued' RETURNING id, state`;
  const [first, second] = await Promise.all([claim(), claim()]);
  assertEquals([first.count, second.count].sort(), [0, 1]);
  assertEquals([...first, ...second], [{ id: 1, state: "claimed" }]);
});

postgresTest(
  "postgres.js: an advisory lock held on a reserved connection excludes the pool's others",
  async (db) => {
    await using sql = postgresClient(db.url, { max: 2 });
    const reserved = await sql.reserve();
    try {
      await reserved`SELECT pg_advisory_lock(42)`;
      const [{ got: whileHeld }] = await sql`SELECT pg_try_advisory_lock(42) AS got`;
      assertEquals(whileHeld, false);
      const [{ released }] = await reserved`SELECT pg_advisory_unlock(42) AS released`;
      assertEquals(released, true);
    } finally {
      reserved.release();
    }
    const [{ got: afterRelease, holder }] = await sql`
    SELECT pg_try_advisory_lock(42) AS got, pg_advisory_unlock(42) AS holder`;
    assertEquals([afterRelease, holder], [true, true]);
  },
);

postgresTest(
  "postgres.js: BIGINT and COUNT(*) come back as strings, as bigint with postgres.BigInt",
  async (db) => {
    const query = "SELECT count(*) AS n, 9007199254740993::int8 AS big, count(*)::int AS small";

    await using plain = postgresClient(db.url, { max: 1 });
    const [asStrings] = await plain.unsafe(query);
    assertEquals({ ...asStrings }, { n: "1", big: "9007199254740993", small: 1 });

    await using exact = postgresClient(db.url, { max: 1, types: { bigint: postgres.BigInt } });
    const [asBigints] = await exact.unsafe(query);
    assertEquals({ ...asBigints }, { n: 1n, big: 9007199254740993n, small: 1 });
    const [{ echoed }] = await exact`SELECT ${2n ** 62n}::int8 AS echoed`;
    assertEquals(echoed, 2n ** 62n);
  },
);
