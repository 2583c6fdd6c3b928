/**
 * The scale-out deployment for tests, set up here once instead of in each test
 * that needs it: one PostgreSQL database and one bucket on the real S3 (Ceph
 * radosgw, tests/helpers/s3.ts), shared by as many server instances as the
 * test starts, in this process (startTestServer) or as main.ts processes with
 * the start task's permissions (spawnServer). Disposing the deployment kills
 * the processes it spawned, removes their data directories, the bucket and
 * the database; instances started in this process are the test's to dispose
 * (`await using`, declared after the deployment, so they go first). main.ts
 * commands run on it as an operator runs them (`command`), and a suite that
 * starts its servers one by one takes each on a deployment of its own
 * (scaleOutServer):
 *
 *   Deno.test({ name: "…", ignore: !scaleOutAvailable(), async fn() {
 *     await using deployment = await scaleOutForTests();
 *     await using a = await deployment.startInstance();
 *     await using b = await deployment.startInstance({ args: ["--sponsored-daily-cap", "1MiB"] });
 *     …
 *   } });
 */
import { postgresAvailable, postgresForTests } from "./postgres.ts";
import { s3Available, s3ForTests, s3ServerFlags, s3ServerKeys } from "./s3.ts";
import type { TestBucket } from "./s3.ts";
import { startTestServer } from "./server.ts";
import type { TestServer, TestServerOptions } from "./server.ts";
import { runMain } from "./main_process.ts";
import type { MainRun } from "./main_process.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import type { SpawnedServer } from "../../scripts/lib/spawn_server.ts";

/** Whether scale-out tests run here: both PostgreSQL and S3 (each fails loudly in CI when missing). */
export function scaleOutAvailable(): boolean {
  return s3Available() && postgresAvailable();
}

export interface ScaleOutOptions {
  /**
   * The database the instances share, for a test that must own its PostgreSQL
   * server to restart, stop or fail it over (scripts/lib/postgres_faults.ts);
   * that test stops the server itself. Default: a fresh database on the test
   * file's server (postgresForTests), dropped when the deployment is disposed.
   */
  databaseUrl?: string;
  /** Flags every instance gets after the deployment's own, e.g. ["--log-requests", "false"]. */
  args?: string[];
}

export interface ScaleOut extends AsyncDisposable {
  readonly databaseUrl: string;
  readonly s3: TestBucket;
  /** The environment that gives an instance the bucket's keys (no flag takes them). */
  readonly env: Record<string, string>;
  /** What points a server or a command at the deployment: --database and the bucket's flags. */
  readonly backendFlags: string[];
  /** An instance's flags: the backend flags, the deployment's args, then `extra`. */
  args(extra?: string[]): string[];
  /** An instance in this process; options.args come after the deployment's flags. */
  startInstance(options?: TestServerOptions): Promise<TestServer>;
  /** An instance as a main.ts process in a data directory of its own, killed on dispose at the latest. */
  spawnInstance(extra?: string[]): Promise<SpawnedServer>;
  /**
   * `main.ts …args` with the backend flags, as an operator runs it: the
   * network and the environment only, since nothing of this deployment lives
   * on the machine; plus a directory to read and write when one is given.
   */
  command(args: string[], options?: { allowDir?: string }): Promise<MainRun>;
}

/** The permissions of a main.ts command on the deployment (see ScaleOut.command). */
export const COMMAND_FLAGS = ["--allow-net", "--allow-env=STORAGE_*,PG*"];

export async function scaleOutForTests(options: ScaleOutOptions = {}): Promise<ScaleOut> {
  const database = options.databaseUrl === undefined ? await postgresForTests() : null;
  const databaseUrl = options.databaseUrl ?? database!.url;
  const s3 = await s3ForTests().catch(async (error) => {
    await database?.[Symbol.asyncDispose]();
    throw error;
  });
  const env = s3ServerKeys(s3);
  const backendFlags = ["--database", databaseUrl, ...s3ServerFlags(s3)];
  const args = (extra: string[] = []) => [...backendFlags, ...(options.args ?? []), ...extra];
  const spawned: { server: SpawnedServer; dataDir: string }[] = [];
  return {
    databaseUrl,
    s3,
    env,
    backendFlags,
    args,
    startInstance: (instance = {}) =>
      startTestServer({ ...instance, args: args(instance.args), env }),
    async spawnInstance(extra = []) {
      const dataDir = await Deno.makeTempDir({ prefix: "scale-out-" });
      try {
        const server = await spawnServer(dataDir, args(extra), { env });
        spawned.push({ server, dataDir });
        return server;
      } catch (error) {
        await Deno.remove(dataDir, { recursive: true }).catch(() => {});
        throw error;
      }
    },
    command: (commandArgs, { allowDir } = {}) =>
      runMain([...commandArgs, ...backendFlags], {
        flags: [
          ...COMMAND_FLAGS,
          ...(allowDir === undefined
            ? []
            : [`--allow-read=${allowDir}`, `--allow-write=${allowDir}`]),
        ],
        env,
      }),
    async [Symbol.asyncDispose]() {
      for (const { server, dataDir } of spawned.reverse()) {
        await server[Symbol.asyncDispose]();
        await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      }
      await s3.dispose();
      await database?.[Symbol.asyncDispose]();
    },
  };
}

/** One instance on a deployment of its own, which goes when the instance is disposed. */
export async function scaleOutServer(
  options: TestServerOptions = {},
): Promise<TestServer & { deployment: ScaleOut }> {
  const deployment = await scaleOutForTests();
  const server = await deployment.startInstance(options).catch(async (error) => {
    await deployment[Symbol.asyncDispose]();
    throw error;
  });
  return {
    ...server,
    deployment,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      await deployment[Symbol.asyncDispose]();
    },
  };
}
