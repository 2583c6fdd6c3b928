/**
 * A real, throwaway PostgreSQL server for tests and benches: no mocks and no shared system
 * cluster, so what runs against it is what runs against production, and nothing outlives it.
 *
 * `startPostgres()` runs initdb into a fresh temp directory, starts the postmaster with
 * `pg_ctl start -w` (which polls the postmaster's own "ready" status, bounded by a timeout; no
 * fixed sleep) on 127.0.0.1 and an ephemeral port (picked free, retried on a collision), with
 * the unix socket inside the temp directory and scram-sha-256 password auth everywhere. A role
 * (LOGIN CREATEDB, not a superuser: what the service itself would be given) and a database it
 * owns are created over TCP with psql, which is also the first real connection.
 *
 * PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user (or
 * `nobody`), which owns the temp directory; as any other user it runs as that user.
 *
 * Durability is the default (fsync on), which benches must measure; tests pass
 * `{ durable: false }` for fsync, synchronous_commit and full_page_writes off.
 *
 * `stop()` is a fast shutdown (SIGINT) of the postmaster by the pid it wrote, escalating to an
 * immediate shutdown (SIGQUIT) and SIGKILL if it does not exit in time, then removes the temp
 * directory. `stopSync()` does the same, blocking; an `unload` handler calls it for every server
 * not stopped by then, so a test file that failed or forgot leaves no postmaster behind. (An
 * uncaught error in `deno run` skips `unload`: scripts stop their server in a `finally`.)
 */
import { freePort } from "./ports.ts";

/** PostgreSQL's server binaries (initdb, pg_ctl, postgres, psql) are not installed here. */
export class PostgresUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PostgresUnavailableError";
  }
}

export interface StartPostgresOptions {
  /**
   * true (default): fsync, synchronous_commit and full_page_writes as shipped (on). false turns
   * them off: fast, and fine for tests, whose data need not survive a crash.
   */
  durable?: boolean;
  /** The role the URL logs in as (LOGIN CREATEDB). Default "storage". */
  user?: string;
  /** Its password. Default: random. */
  password?: string;
  /** The database the URL names, owned by the role. Default "storage". */
  database?: string;
  /** Default 100. */
  maxConnections?: number;
  /** Further postgresql.conf settings, e.g. { shared_buffers: "256MB" }. */
  settings?: Record<string, string | number>;
  /** Where initdb, pg_ctl, postgres and psql are. Default: see findPostgresBinDir(). */
  binDir?: string;
  /** Bound on initdb, on the start (per attempt) and on the setup. Default 60 s. */
  timeoutMs?: number;
}

export interface PostgresServer extends AsyncDisposable {
  /** postgres://user:password@127.0.0.1:port/database, scram-sha-256 auth. */
  readonly url: string;
  /** The same server as the `postgres` superuser, e.g. to terminate backends or inspect. */
  readonly adminUrl: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  readonly dataDir: string;
  /** The postmaster's pid. */
  readonly pid: number;
  /** Whether the postmaster is still running. */
  readonly isRunning: boolean;
  /** The server's log (its stderr), for a failing test to show. */
  readonly logFile: string;
  readonly binDir: string;
  /** Fast shutdown, then the temp directory is removed. Idempotent. */
  stop(): Promise<void>;
  /** stop(), blocking the thread instead of awaiting (what the `unload` handler calls). */
  stopSync(): void;
}

const LIB_DIR = "/usr/lib/postgresql";
const TOOLS = ["initdb", "pg_ctl", "postgres", "psql"] as const;
const SUPERUSER = "postgres";
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const PORT_ATTEMPTS = 5;
/** How long each shutdown mode gets before the next, harsher one: fast, immediate, kill. */
const SHUTDOWN_STEPS: ReadonlyArray<readonly [Deno.Signal, number]> = [
  ["SIGINT", 30_000],
  ["SIGQUIT", 5_000],
  ["SIGKILL", 5_000],
];

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const binDir = options.binDir ?? findPostgresBinDir();
  assertToolsIn(binDir);
  const user = identifier("user", options.user ?? "storage");
  const database = identifier("database", options.database ?? "storage");
  if (user === SUPERUSER) throw new Error(`user: "${SUPERUSER}" is the superuser's name`);
  const password = options.password ?? randomHex(16);
  const superuserPassword = randomHex(16);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const runAs = serverUser();

  const tempDir = await Deno.makeTempDir({ prefix: "postgres-" });
  const dataDir = `${tempDir}/data`;
  const socketDir = `${tempDir}/run`;
  const logFile = `${tempDir}/postgres.log`;
  let pid: number | null = null;
  try {
    await Deno.mkdir(socketDir);
    const passwordFile = `${tempDir}/superuser-password`;
    await Deno.writeTextFile(passwordFile, superuserPassword, { mode: 0o600 });
    await Deno.writeTextFile(logFile, "");
    if (runAs) {
      for (const path of [tempDir, socketDir, passwordFile, logFile]) {
        await Deno.chown(path, runAs.uid, runAs.gid);
      }
    }
    const durable = options.durable ?? true;
    await runTool(`${binDir}/initdb`, {
      args: [
        "--pgdata",
        dataDir,
        "--username",
        SUPERUSER,
        `--pwfile=${passwordFile}`,
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
        "--no-instructions",
        ...(durable ? [] : ["--no-sync"]),
      ],
      runAs,
      timeoutMs,
    });
    await Deno.remove(passwordFile);
    await Deno.writeTextFile(
      `${dataDir}/postgresql.conf`,
      configLines({
        listen_addresses: "127.0.0.1",
        unix_socket_directories: socketDir,
        max_connections: options.maxConnections ?? 100,
        ...(durable ? {} : { fsync: "off", synchronous_commit: "off", full_page_writes: "off" }),
        ...options.settings,
      }),
      { append: true },
    );

    const port = await startOnFreePort({ binDir, dataDir, logFile, runAs, timeoutMs });
    pid = postmasterPid(dataDir);
    if (pid === null) throw new Error(`postgres started but ${dataDir}/postmaster.pid is missing`);

    await runTool(`${binDir}/psql`, {
      args: [
        "--no-psqlrc",
        "--quiet",
        "--set=ON_ERROR_STOP=1",
        `--set=role=${user}`,
        `--set=password=${password}`,
        `--set=database=${database}`,
        `--host=127.0.0.1`,
        `--port=${port}`,
        `--username=${SUPERUSER}`,
        "--dbname=postgres",
      ],
      env: { PGPASSWORD: superuserPassword, PGCONNECT_TIMEOUT: "10" },
      stdin: `CREATE ROLE :"role" LOGIN CREATEDB PASSWORD :'password';\n` +
        `CREATE DATABASE :"database" OWNER :"role";\n`,
      timeoutMs,
    });

    return serverHandle({
      tempDir,
      dataDir,
      logFile,
      binDir,
      port,
      pid,
      user,
      password,
      database,
      superuserPassword,
    });
  } catch (error) {
    const running = pid ?? postmasterPid(dataDir);
    if (running !== null) await shutdown(running).catch(() => {});
    await Deno.remove(tempDir, { recursive: true }).catch(() => {});
    throw error;
  }
}

/** What serverHandle() needs of a cluster that runs. */
export interface RunningCluster {
  /** Removed with everything in it when the server stops. */
  tempDir: string;
  dataDir: string;
  logFile: string;
  binDir: string;
  port: number;
  /** The postmaster's pid when it started (a restart gives it another). */
  pid: number;
  user: string;
  password: string;
  database: string;
  superuserPassword: string;
}

/**
 * The PostgresServer of a running cluster: stopping it (or the `unload`
 * handler) shuts down whichever postmaster runs in its data directory then,
 * so a cluster restarted by a fault test (postgres_faults.ts) is stopped too.
 */
export function serverHandle(cluster: RunningCluster): PostgresServer {
  const { tempDir, dataDir, port, user, password, database, superuserPassword } = cluster;
  const currentPid = () => postmasterPid(dataDir) ?? cluster.pid;
  const stopSync = () => {
    shutdownSync(currentPid());
    try {
      Deno.removeSync(tempDir, { recursive: true });
    } catch (error) {
      ignoreNotFound(error);
    }
    forget();
  };
  const forget = stopOnUnload(stopSync);
  let stopping: Promise<void> | null = null;
  const stop = () =>
    stopping ??= (async () => {
      await shutdown(currentPid());
      await Deno.remove(tempDir, { recursive: true }).catch(ignoreNotFound);
      forget();
    })();
  return {
    url: postgresUrl({ user, password, port, database }),
    adminUrl: postgresUrl({ user: SUPERUSER, password: superuserPassword, port, database }),
    port,
    user,
    password,
    database,
    dataDir,
    get pid() {
      return currentPid();
    },
    get isRunning() {
      return processRunning(currentPid());
    },
    logFile: cluster.logFile,
    binDir: cluster.binDir,
    stop,
    stopSync,
    [Symbol.asyncDispose]: stop,
  };
}

/** The stopSync of each server started and not yet stopped. */
const unstopped = new Set<() => void>();
let unloadHandlerAdded = false;

/**
 * Has stopSync run when the process unloads, if the server has not been stopped by then (a
 * test file's `unload` comes after its last test, even one failed by an uncaught error).
 * Returns the function that takes it off the list.
 */
function stopOnUnload(stopSync: () => void): () => void {
  if (!unloadHandlerAdded) {
    unloadHandlerAdded = true;
    globalThis.addEventListener("unload", () => {
      for (const stop of unstopped) {
        try {
          stop();
        } catch (error) {
          console.error(`stopping postgres on unload: ${error}`);
        }
      }
    });
  }
  unstopped.add(stopSync);
  return () => unstopped.delete(stopSync);
}

/** Whether startPostgres() can find PostgreSQL's binaries (without a binDir). */
export function postgresInstalled(): boolean {
  try {
    findPostgresBinDir();
    return true;
  } catch (error) {
    if (error instanceof PostgresUnavailableError) return false;
    throw error;
  }
}

/** The highest-versioned /usr/lib/postgresql/N/bin holding all the tools, else a PATH directory. */
export function findPostgresBinDir(): string {
  const versions = readDirNames(LIB_DIR)
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  const pathDirs = (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir !== "");
  const candidates = [...versions.map((version) => `${LIB_DIR}/${version}/bin`), ...pathDirs];
  const found = candidates.find((dir) => TOOLS.every((tool) => isFile(`${dir}/${tool}`)));
  if (found === undefined) {
    throw new PostgresUnavailableError(
      `PostgreSQL is not installed: no ${TOOLS.join(", ")} together in ${LIB_DIR}/*/bin or PATH ` +
        `(on Debian: apt-get install postgresql-15)`,
    );
  }
  return found;
}

function assertToolsIn(binDir: string): void {
  const missing = TOOLS.filter((tool) => !isFile(`${binDir}/${tool}`));
  if (missing.length > 0) {
    throw new PostgresUnavailableError(
      `PostgreSQL tools missing in ${binDir}: ${missing.join(", ")}`,
    );
  }
}

export interface OsUser {
  uid: number;
  gid: number;
}

/** null: run as ourselves. As root: the `postgres` user, else `nobody`. */
export function serverUser(): OsUser | null {
  if (Deno.uid() !== 0) return null;
  const passwd = Deno.readTextFileSync("/etc/passwd").split("\n").map((line) => line.split(":"));
  for (const name of ["postgres", "nobody"]) {
    const entry = passwd.find((fields) => fields[0] === name);
    if (entry && Number(entry[2]) !== 0) return { uid: Number(entry[2]), gid: Number(entry[3]) };
  }
  throw new Error(
    "running as root, and neither a postgres nor a nobody user exists to run postgres",
  );
}

interface StartAttempt {
  binDir: string;
  dataDir: string;
  logFile: string;
  runAs: OsUser | null;
  timeoutMs: number;
}

/** Starts the postmaster on a free port, trying another port if one was taken meanwhile. */
async function startOnFreePort(attempt: StartAttempt): Promise<number> {
  for (let tries = 1;; tries++) {
    const port = freePort();
    const logStart = (await Deno.stat(attempt.logFile)).size;
    try {
      await runTool(`${attempt.binDir}/pg_ctl`, {
        args: [
          "start",
          "--pgdata",
          attempt.dataDir,
          "--log",
          attempt.logFile,
          "--wait",
          "--timeout",
          String(Math.ceil(attempt.timeoutMs / 1000)),
          "--options",
          `-p ${port}`,
        ],
        runAs: attempt.runAs,
        timeoutMs: attempt.timeoutMs + 5_000,
      });
      return port;
    } catch (error) {
      const log = (await Deno.readTextFile(attempt.logFile)).slice(logStart);
      const collided = /could not bind .*Address already in use/.test(log) &&
        postmasterPid(attempt.dataDir) === null;
      if (collided && tries < PORT_ATTEMPTS) continue;
      throw new Error(`${(error as Error).message}\n--- postgres log ---\n${log}`);
    }
  }
}

// One free-port helper for every script (ports.ts); postgres_faults.ts takes it from here.
export { freePort };

export interface ToolOptions {
  args: string[];
  runAs?: OsUser | null;
  env?: Record<string, string>;
  stdin?: string;
  timeoutMs: number;
}

/** Runs a tool to completion within timeoutMs; fails with its output if it fails. */
export async function runTool(program: string, options: ToolOptions): Promise<void> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs);
  try {
    const child = new Deno.Command(program, {
      args: options.args,
      env: { LC_ALL: "C", ...options.env },
      stdin: options.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      signal: abort.signal,
      ...(options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {}),
    }).spawn();
    if (options.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      // A tool that exits without reading fails below with its own output, not a broken pipe.
      await writer.write(new TextEncoder().encode(options.stdin)).catch(() => {});
      await writer.close().catch(() => {});
    }
    const { code, stdout, stderr } = await child.output();
    if (code !== 0) {
      const decoder = new TextDecoder();
      const why = abort.signal.aborted ? `timed out after ${options.timeoutMs} ms` : `exit ${code}`;
      throw new Error(
        `${program.split("/").at(-1)} failed (${why}): ${decoder.decode(stderr)}${
          decoder.decode(stdout)
        }`.trim(),
      );
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The pid on postmaster.pid's first line, while the file exists. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(Deno.readTextFileSync(`${dataDir}/postmaster.pid`).split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Whether pid is alive (Linux's /proc): not gone, and not a zombie. The postmaster's parent was
 * pg_ctl, which exits, so an exited postmaster may stay a zombie if init does not reap it.
 */
export function processRunning(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2).charAt(0);
    return state !== "Z" && state !== "X";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Walks SHUTDOWN_STEPS for pid: each `gone()` call says whether it has exited, signalling the
 * first step, or the next one once the current step's time is up. Callers poll it, awaiting
 * or blocking between calls; it throws once even SIGKILL has not been enough.
 */
function shutdownSequence(pid: number): { gone(): boolean } {
  // A paused server (a fault test's SIGSTOP) would not act on the signals that follow.
  for (const member of processTree(pid)) signal(member, "SIGCONT");
  let step = -1;
  let deadline = 0;
  return {
    gone() {
      if (!processRunning(pid)) return true;
      if (step === -1 || Date.now() >= deadline) {
        step++;
        if (step === SHUTDOWN_STEPS.length) {
          const signals = SHUTDOWN_STEPS.map(([name]) => name).join(", ");
          throw new Error(`postgres (pid ${pid}) survived ${signals}`);
        }
        const [name, ms] = SHUTDOWN_STEPS[step];
        signal(pid, name);
        deadline = Date.now() + ms;
      }
      return false;
    },
  };
}

async function shutdown(pid: number): Promise<void> {
  const sequence = shutdownSequence(pid);
  while (!sequence.gone()) await sleep(10);
}

function shutdownSync(pid: number): void {
  const sequence = shutdownSequence(pid);
  while (!sequence.gone()) sleepSync(10);
}

/** pid and the processes whose parent it is (a postmaster's backends and workers). */
export function processTree(pid: number): number[] {
  if (!processRunning(pid)) return [];
  const tree = [pid];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent === pid) tree.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return tree;
}

export function signal(pid: number, name: Deno.Signal): void {
  try {
    Deno.kill(pid, name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error; // already gone (ESRCH)
  }
}

function ignoreNotFound(error: unknown): void {
  if (!(error instanceof Deno.errors.NotFound)) throw error;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function configLines(settings: Record<string, string | number>): string {
  const quote = (value: string | number) =>
    typeof value === "number" ? String(value) : `'${value.replaceAll("'", "''")}'`;
  const lines = Object.entries(settings).map(([name, value]) => `${name} = ${quote(value)}`);
  return `\n# startPostgres()\n${lines.join("\n")}\n`;
}

function postgresUrl(parts: { user: string; password: string; port: number; database: string }) {
  const { user, password, port, database } = parts;
  return `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

function identifier(what: string, name: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new Error(`${what}: "${name}" is not a plain lowercase identifier`);
  }
  return name;
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)))
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}

function readDirNames(dir: string): string[] {
  try {
    return Array.from(Deno.readDirSync(dir), (entry) => entry.name);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}
