/**
 * PostgreSQL for tests: each test gets a database of its own (CREATE DATABASE, random name) on
 * one real server per test file, so tests cannot see each other's rows while the server's start
 * (initdb, ~1-2 s) is paid once per file, not per test.
 *
 * The server starts on the first postgresForTests() call and stops when the file's tests are
 * done: startPostgres() stops every server still running from an `unload` handler, which runs
 * after the file's last test whatever was filtered out or failed, and blocks until the
 * postmaster has exited and its temp dir is gone. Nothing of the server is a Deno op or
 * resource (it is a separate process; every client the helper opens is ended before it
 * returns), so `deno test --trace-leaks` has nothing to report:
 *
 *   Deno.test({ name: "…", ignore: !postgresAvailable(), async fn() {
 *     await using db = await postgresForTests();
 *     await using sql = postgresClient(db.url);   // ended before the database is dropped
 *     …
 *   } });
 *
 * Without PostgreSQL the tests are ignored, except in CI (CI=true), where .ci/run installs it
 * (Debian's postgresql-15) and its absence must fail.
 */
import postgres from "postgres";
import {
  postgresInstalled,
  type PostgresServer,
  startPostgres,
} from "../../scripts/lib/postgres_server.ts";

export interface TestDatabase extends AsyncDisposable {
  /** postgres://…/<name>, as the server's role, which owns the database. */
  readonly url: string;
  readonly name: string;
  /** The file's shared server: look, don't stop it (other tests of the file use it). */
  readonly server: Pick<PostgresServer, "port" | "pid" | "dataDir" | "logFile">;
}

let warnedIgnored = false;

/** Whether PostgreSQL tests run here: installed, or CI, where its absence is a failure. */
export function postgresAvailable(): boolean {
  if (postgresInstalled() || Deno.env.get("CI") === "true") return true;
  if (!warnedIgnored) console.warn("PostgreSQL tests ignored: PostgreSQL is not installed");
  warnedIgnored = true;
  return false;
}

/** A fresh, empty database on the file's server; disposing drops it (closing its connections). */
export async function postgresForTests(): Promise<TestDatabase> {
  const server = await sharedServer();
  const name = `test_${crypto.randomUUID().replaceAll("-", "")}`;
  await asRole(server, (sql) => sql`CREATE DATABASE ${sql(name)}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  const { port, pid, dataDir, logFile } = server;
  return {
    url: url.href,
    name,
    server: { port, pid, dataDir, logFile },
    async [Symbol.asyncDispose]() {
      await asRole(server, (sql) => sql`DROP DATABASE ${sql(name)} WITH (FORCE)`);
    },
  };
}

type CustomTypes = Record<string, postgres.PostgresType>;

/** A postgres.js client that gives up connecting after 5 s and is ended by `await using`. */
export function postgresClient<Types extends CustomTypes = Record<never, never>>(
  url: string,
  options: postgres.Options<Types> = {},
): ReturnType<typeof postgres<Types>> & AsyncDisposable {
  const sql = postgres<Types>(url, { connect_timeout: 5, onnotice: () => {}, ...options });
  return Object.assign(sql, {
    [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }),
  });
}

/** The file's server, started by the first postgresForTests() (a test file is a process). */
let fileServer: Promise<PostgresServer> | null = null;

function sharedServer(): Promise<PostgresServer> {
  return fileServer ??= startPostgres({ durable: false });
}

async function asRole(
  server: PostgresServer,
  run: (sql: postgres.Sql) => Promise<unknown>,
): Promise<void> {
  await using sql = postgresClient(server.url, { max: 1 });
  await run(sql);
}

/**
 * A test on a fresh database of the file's server, ignored where PostgreSQL
 * tests do not run: the shape every PostgreSQL test had spelled out.
 */
export function postgresTest(
  name: string,
  fn: (db: TestDatabase) => Promise<void>,
  options: Pick<Deno.TestDefinition, "sanitizeOps" | "sanitizeResources"> = {},
): void {
  Deno.test({
    ...options,
    name,
    ignore: !postgresAvailable(),
    async fn() {
      await using db = await postgresForTests();
      await fn(db);
    },
  });
}
