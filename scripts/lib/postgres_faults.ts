/**
 * Faults of a throwaway PostgreSQL (postgres_server.ts), for the fault tests
 * and the fault bench: what an operator's or a machine's mishap does to the
 * database under running instances, done the way it happens in production.
 *
 *   - restart: `pg_ctl restart -m fast|immediate` (every connection is cut;
 *     immediate is a crash and a recovery);
 *   - stop / start: `pg_ctl stop`, then `pg_ctl start` on the same port
 *     (connections refused in between);
 *   - pause / resume: SIGSTOP / SIGCONT of the postmaster and every backend
 *     (a hung server: the kernel still accepts, nothing answers);
 *   - a standby: `pg_basebackup -R` into a streaming replica on another port,
 *     which `promote` turns into a primary (a failover).
 *
 * Every process is signalled by the pid its postmaster wrote, never by name.
 */
import {
  freePort,
  postmasterPid,
  processTree,
  runTool,
  serverHandle,
  serverUser,
  signal,
} from "./postgres_server.ts";
import type { PostgresServer } from "./postgres_server.ts";

export interface PostgresFaults {
  restart(mode: "fast" | "immediate"): Promise<void>;
  /** Shuts the server down; connections to its port are refused until start(). */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts it again on its port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** SIGSTOP the postmaster, then its processes: the server hangs. */
  pause(): void;
  /** SIGCONT its processes, then the postmaster. */
  resume(): void;
  /** Ends a standby's recovery: it becomes a primary that takes writes. */
  promote(): Promise<void>;
}

const TIMEOUT_S = 60;

export function postgresFaults(server: PostgresServer): PostgresFaults {
  const runAs = serverUser();
  const ctl = (args: string[]) =>
    runTool(`${server.binDir}/pg_ctl`, {
      args: [...args, "--pgdata", server.dataDir, "--log", server.logFile],
      runAs,
      timeoutMs: (TIMEOUT_S + 10) * 1000,
    });
  const wait = ["--wait", "--timeout", String(TIMEOUT_S)];
  let paused: number[] = [];
  return {
    restart: (mode) => ctl(["restart", ...wait, "--mode", mode]),
    stop: (mode = "fast") => ctl(["stop", ...wait, "--mode", mode]),
    start: () => ctl(["start", ...wait, "--options", `-p ${server.port}`]),
    pause() {
      const postmaster = postmasterPid(server.dataDir);
      paused = postmaster === null ? [] : processTree(postmaster);
      for (const pid of paused) signal(pid, "SIGSTOP");
    },
    resume() {
      for (const pid of paused.toReversed()) signal(pid, "SIGCONT");
      paused = [];
    },
    promote: () => ctl(["promote", ...wait]),
  };
}

/**
 * A streaming replica of `primary` (pg_basebackup -R, its WAL streamed
 * during the copy) running as a hot standby on a port of its own: same
 * roles, passwords and databases. Stop it like any server; `promote` it
 * through postgresFaults().
 */
export async function startStandby(primary: PostgresServer): Promise<PostgresServer> {
  const runAs = serverUser();
  const admin = new URL(primary.adminUrl);
  const superuserPassword = decodeURIComponent(admin.password);
  const tempDir = await Deno.makeTempDir({ prefix: "postgres-standby-" });
  const dataDir = `${tempDir}/data`;
  const socketDir = `${tempDir}/run`;
  const logFile = `${tempDir}/postgres.log`;
  try {
    await Deno.mkdir(socketDir);
    await Deno.writeTextFile(logFile, "");
    if (runAs) {
      for (const path of [tempDir, socketDir, logFile]) {
        await Deno.chown(path, runAs.uid, runAs.gid);
      }
    }
    await runTool(`${primary.binDir}/pg_basebackup`, {
      args: [
        `--host=127.0.0.1`,
        `--port=${primary.port}`,
        `--username=${admin.username}`,
        "--pgdata",
        dataDir,
        "--write-recovery-conf",
        "--wal-method=stream",
        "--checkpoint=fast",
      ],
      env: { PGPASSWORD: superuserPassword, PGCONNECT_TIMEOUT: "10" },
      runAs,
      timeoutMs: TIMEOUT_S * 1000,
    });
    const port = freePort();
    await Deno.writeTextFile(
      `${dataDir}/postgresql.conf`,
      `\n# startStandby()\nport = ${port}\nunix_socket_directories = '${socketDir}'\n`,
      { append: true },
    );
    // --log: a postmaster writing to pg_ctl's pipes would keep them open, and runTool waiting.
    await runTool(`${primary.binDir}/pg_ctl`, {
      args: [
        "start",
        "--wait",
        "--timeout",
        String(TIMEOUT_S),
        "--pgdata",
        dataDir,
        "--log",
        logFile,
      ],
      runAs,
      timeoutMs: (TIMEOUT_S + 10) * 1000,
    });
    const pid = postmasterPid(dataDir);
    if (pid === null) {
      throw new Error(`the standby started but ${dataDir}/postmaster.pid is missing`);
    }
    return serverHandle({
      tempDir,
      dataDir,
      logFile,
      binDir: primary.binDir,
      port,
      pid,
      user: primary.user,
      password: primary.password,
      database: primary.database,
      superuserPassword,
    });
  } catch (error) {
    const running = postmasterPid(dataDir);
    if (running !== null) signal(running, "SIGQUIT");
    await Deno.remove(tempDir, { recursive: true }).catch(() => {});
    throw error;
  }
}

/**
 * libpq's URL naming both servers (a WHATWG URL cannot hold two hosts), for a
 * client that fails over to whichever takes writes.
 */
export function multiHostUrl(primary: PostgresServer, standby: PostgresServer): string {
  const user = encodeURIComponent(primary.user);
  const password = encodeURIComponent(primary.password);
  return `postgres://${user}:${password}@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/` +
    `${primary.database}?target_session_attrs=read-write`;
}
