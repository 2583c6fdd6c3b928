/**
 * The test harness: the real server (startServer, the same wiring main.ts
 * uses) on 127.0.0.1 port 0 with a fresh temp data directory. Dispose it with
 * `await using`, which shuts the server down and removes the directory.
 */
import { loadConfig } from "../../src/config/mod.ts";
import { startServer } from "../../src/server/start.ts";
import type { RunningServer } from "../../src/server/start.ts";
import type { JobIntervals } from "../../src/server/jobs.ts";
import type { Clock } from "../../src/kernel/clock.ts";
import { createJsonLogger } from "../../src/kernel/log.ts";
import type { PieceStore } from "../../src/driver/driver.ts";

export interface TestServerOptions {
  /** Extra flags, e.g. ["--sponsored-daily-cap", "1KiB"]. */
  args?: string[];
  clock?: Clock;
  /** Reuse a data directory (for restart tests); it is then not removed on dispose. */
  dataDir?: string;
  /** Wraps the piece store, for driver-level fault injection. */
  wrapStore?: (store: PieceStore) => PieceStore;
  /** How often background jobs run, in ms, by name (src/server/jobs.ts has the defaults). */
  jobIntervals?: JobIntervals;
  /** How often the TLS files are checked for a renewal (the server's default is 5 s). */
  tlsPollIntervalMs?: number;
  /** Environment the config reads (e.g. the S3 keys, which no flag takes). */
  env?: Record<string, string>;
  /** With --database: heartbeat and dead-after times (the server's defaults are 5 s, 30 s). */
  postgresTimings?: { heartbeatMs?: number; deadAfterMs?: number };
}

export interface TestServer extends AsyncDisposable {
  url: string;
  dataDir: string;
  server: RunningServer;
  /** Log lines the server wrote (JSON objects). */
  logs: Record<string, unknown>[];
  upload(cid: string, body: Uint8Array<ArrayBuffer> | string, init?: UploadInit): Promise<Response>;
  get(path: string, init?: RequestInit): Promise<Response>;
}

export interface UploadInit {
  contentType?: string;
  filename?: string;
  headers?: Record<string, string>;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const ownsDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "storage-test-" });
  const loaded = loadConfig([
    "--hostname",
    "127.0.0.1",
    "--port",
    "0",
    "--data-dir",
    dataDir,
    "--shutdown-timeout",
    "5",
    ...(options.args ?? []),
  ], options.env ?? {});
  if (loaded.kind !== "config") throw new Error("unexpected --help");
  const logs: Record<string, unknown>[] = [];
  const server = await startServer({
    config: loaded.config,
    clock: options.clock,
    wrapStore: options.wrapStore,
    jobIntervals: options.jobIntervals,
    tlsPollIntervalMs: options.tlsPollIntervalMs,
    postgresTimings: options.postgresTimings,
    logger: createJsonLogger((line) => logs.push(JSON.parse(line))),
  });
  const url = server.url;
  return {
    url,
    dataDir,
    server,
    logs,
    upload(cid, body, init = {}) {
      const headers: Record<string, string> = {
        "content-type": init.contentType ?? "application/octet-stream",
        ...init.headers,
      };
      if (init.filename !== undefined) headers["x-filename"] = init.filename;
      return fetch(`${url}/api/upload?cid=${encodeURIComponent(cid)}`, {
        method: "POST",
        headers,
        body: typeof body === "string" ? new TextEncoder().encode(body) : body,
      });
    },
    get(path, init) {
      return fetch(`${url}${path}`, init);
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      if (ownsDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/** Reads a JSON error body and checks the contract's shape. */
export async function errorOf(response: Response): Promise<{ error: string; message: string }> {
  const body = await response.json();
  if (typeof body.error !== "string" || typeof body.message !== "string") {
    throw new Error(`not an error body: ${JSON.stringify(body)}`);
  }
  return body;
}

/** Deterministic bytes: byte i = (i * 31 + 7) % 256, offset by seed. */
export function patternBytes(size: number, seed = 0): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + 7 + seed) & 0xff;
  return out;
}

export interface SignupResult {
  token: string;
  userId: string;
  email: string;
  scopes: string[];
  quotaMb: number;
  expiresAt: string;
}

/** Signs up (default: all scopes, full quota) and returns the signup result. */
export async function signup(
  server: TestServer,
  body: Record<string, unknown> = {},
): Promise<SignupResult> {
  const response = await fetch(`${server.url}/api/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "dev@example.org", label: "test", ...body }),
  });
  if (response.status !== 201) throw new Error(`signup failed: ${await response.text()}`);
  return await response.json();
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The jti of a token, read from its payload as any client could. */
export function jtiOf(token: string): string {
  const payload = token.replace(/^pk_live_/, "").split(".")[1];
  const json = new TextDecoder().decode(Uint8Array.fromBase64(payload, { alphabet: "base64url" }));
  return JSON.parse(json).jti;
}
