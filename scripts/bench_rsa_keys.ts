/**
 * Bench: --token-alg RS256 with its keys in PostgreSQL (db/postgres/rsa_keys.ts)
 * — what reading them costs, and how fast a `rotate-key --database` reaches
 * two instances sharing the database. Both are main.ts processes with the
 * default --hmac-key-reload (2 s) on one PostgreSQL (fsync off). Reported as
 * median, min and max:
 *
 * - readMicroseconds: one read of the keys (the SELECT an instance makes
 *   every --hmac-key-reload, and before an unknown kid or a JWKS answer);
 * - jwksMs: GET /.well-known/jwks.json spaced 250 ms apart (each makes a
 *   read) and back to back (each within 0.1 s of the last read: it waits
 *   for the next one);
 * - rotations, alternately: publishedMs, from rotate-key's exit to both
 *   instances' JWKS naming the new kid first (asked at once, then every
 *   25 ms); or signingMs, to the first token one instance signs with it
 *   (signups every 25 ms, no JWKS request: its next scheduled read), and
 *   unknownKidMs, a request on the other instance with that token, before
 *   that one's own scheduled read.
 *
 *   deno run -A scripts/bench_rsa_keys.ts [--rotations 6] [--reads 500]
 *
 * Talks only to 127.0.0.1 and stops only what it started, by PID.
 */
import { parseArgs } from "node:util";
import { spawnServer } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { startPostgres } from "./lib/postgres_server.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";
import { PostgresDatabase } from "../src/db/postgres/postgres_database.ts";
import { silentLogger } from "../src/kernel/log.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const POLL_MS = 25;

function kidOf(token: string): string {
  const header = token.replace(/^pk_live_/, "").split(".")[0];
  const json = new TextDecoder().decode(Uint8Array.fromBase64(header, { alphabet: "base64url" }));
  return JSON.parse(json).kid;
}

let signups = 0;
async function signup(server: SpawnedServer): Promise<string> {
  const response = await fetch(`${server.url}/api/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `bench${signups++}@example.org`, label: "bench" }),
  });
  if (response.status !== 201) throw new Error(`signup: ${await response.text()}`);
  return (await response.json()).token;
}

async function publishedKids(server: SpawnedServer): Promise<string[]> {
  const jwks = await (await fetch(`${server.url}/.well-known/jwks.json`)).json();
  return jwks.keys.map((key: { kid: string }) => key.kid);
}

/** ms until `done()` holds, asked every POLL_MS. */
async function until(done: () => Promise<boolean>, started: number): Promise<number> {
  while (!await done()) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  return performance.now() - started;
}

async function rotateKey(databaseUrl: string): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env=STORAGE_*,PG*",
      `${ROOT}main.ts`,
      "rotate-key",
      "--database",
      databaseUrl,
      "--token-alg",
      "RS256",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}

async function readCost(databaseUrl: string, reads: number): Promise<Summary> {
  const database = await PostgresDatabase.open({ url: databaseUrl, logger: silentLogger });
  try {
    const micros: number[] = [];
    for (let i = 0; i < reads; i++) {
      const started = performance.now();
      await database.rsaKeys.read();
      micros.push((performance.now() - started) * 1000);
    }
    return summarize(micros);
  } finally {
    await database.close();
  }
}

async function jwksLatency(server: SpawnedServer, count: number, gapMs: number) {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    const started = performance.now();
    await publishedKids(server);
    ms.push(performance.now() - started);
  }
  return summarize(ms);
}

export async function benchRsaKeys(options: { rotations: number; reads: number }) {
  await using postgres = await startPostgres({ durable: false });
  const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  const args = ["--database", postgres.url, "--token-alg", "RS256", "--signup-limit", "1000000"];
  try {
    await using a = await spawnServer(dirs[0], args);
    await using b = await spawnServer(dirs[1], args);
    const published: number[] = [];
    const signing: number[] = [];
    const unknownKid: number[] = [];
    for (let round = 0; round < options.rotations; round++) {
      const oldKid = (await publishedKids(a))[0];
      // Let both settle into their schedules, and start each rotation at another phase.
      await new Promise((resolve) => setTimeout(resolve, 2000 + 300 * round));
      await rotateKey(postgres.url);
      const rotated = performance.now();
      if (round % 2 === 1) {
        // The published set: both instances, asked right after the rotation.
        await until(async () => (await publishedKids(a))[0] !== oldKid, rotated);
        await until(async () => (await publishedKids(b))[0] !== oldKid, rotated);
        published.push(performance.now() - rotated);
        continue;
      }
      // Signing (no JWKS request meanwhile: it would read the keys and move signing on).
      let first = "";
      const [signer, other] = round % 4 === 0 ? [a, b] : [b, a];
      signing.push(
        await until(async () => kidOf(first = await signup(signer)) !== oldKid, rotated),
      );
      const started = performance.now();
      const answer = await fetch(`${other.url}/api/files`, {
        headers: { authorization: `Bearer ${first}` },
      });
      await answer.body?.cancel();
      if (answer.status !== 200) throw new Error(`the other instance answered ${answer.status}`);
      unknownKid.push(performance.now() - started);
    }
    return {
      readMicroseconds: await readCost(postgres.url, options.reads),
      jwksMs: {
        spaced250ms: await jwksLatency(a, 20, 250),
        backToBack: await jwksLatency(a, 20, 0),
      },
      rotations: options.rotations,
      publishedMs: summarize(published),
      signingMs: summarize(signing),
      unknownKidMs: summarize(unknownKid),
      machine: "shared (other work ran beside it)",
    };
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { rotations: { type: "string" }, reads: { type: "string" } },
  });
  const result = await benchRsaKeys({
    rotations: Number(values.rotations ?? 6),
    reads: Number(values.reads ?? 500),
  });
  console.log(JSON.stringify(result, null, 2));
}
