/**
 * Crash safety: spawn the real server (start task's flags), start concurrent
 * uploads, SIGKILL the server at a random moment, restart it, and check:
 *   - no temp file survives start-up;
 *   - every piece the database knows is on disk with its recorded size and SHA-256;
 *   - no deal points at a missing piece;
 *   - the usage counter equals the deals it counts, and nothing stays reserved;
 *   - every upload that got a 200 before the kill is retrievable, byte-identical.
 * Seeded and bounded; talks only to 127.0.0.1; ends the servers it starts by PID.
 *
 *   deno run -A scripts/crash_test.ts [--iterations 20] [--seed 7]
 */
import { DatabaseSync } from "node:sqlite";
import { createHash } from "node:crypto";
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import { shardOf } from "../src/driver/disk/layout.ts";
import { seededRandom } from "./lib/random.ts";
import { scriptArgs } from "./lib/args.ts";

const { iterations, seed } = scriptArgs(
  "Usage: deno run -A scripts/crash_test.ts [--iterations 20] [--seed 7]",
  {
    iterations: { type: "number", default: 20, integer: true, min: 1 },
    seed: { type: "number", default: 7, integer: true, min: 0 },
  },
);
const KIB = 1024;

const random = seededRandom(seed);

interface Upload {
  cid: string;
  size: number;
  fill: number;
}

function chunkFor(fill: number): Uint8Array {
  const chunk = new Uint8Array(64 * KIB);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31 + fill) & 0xff;
  return chunk;
}

function sha256Of(upload: Upload): string {
  const chunk = chunkFor(upload.fill);
  const hash = createHash("sha256");
  for (let sent = 0; sent < upload.size; sent += chunk.length) {
    hash.update(chunk.subarray(0, Math.min(chunk.length, upload.size - sent)));
  }
  return hash.digest("hex");
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  const file = await Deno.open(path);
  for await (const part of file.readable) hash.update(part);
  return hash.digest("hex");
}

const failures: string[] = [];
function check(condition: boolean, message: string) {
  if (!condition) failures.push(message);
}

/** Waits (up to 30 s) until the server has hashed every piece acknowledged before it. */
async function waitForDigests(url: string) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const health = await (await fetch(`${url}/healthz`)).json();
    if (health.digests.backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  check(false, "the server did not finish hashing stored pieces within 30 s");
}

async function checkInvariants(url: string, dataDir: string, acknowledged: Map<string, Upload>) {
  await waitForDigests(url);
  // The start-up sweep runs in the background: it has a few seconds.
  let temp: string[] = [];
  for (const until = Date.now() + 10_000; Date.now() < until;) {
    temp = [];
    for await (const e of Deno.readDir(`${dataDir}/pieces/tmp`)) temp.push(e.name);
    if (temp.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  check(temp.length === 0, `temp files survived start-up: ${temp.join(", ")}`);

  const db = new DatabaseSync(`${dataDir}/storage.db`, { readOnly: true });
  try {
    const pieces = db.prepare("SELECT cid, size, sha256 FROM pieces").all() as {
      cid: string;
      size: number;
      sha256: string | null;
    }[];
    for (const piece of pieces) {
      const path = `${dataDir}/pieces/${shardOf(piece.cid)}/${piece.cid}`;
      const info = await Deno.stat(path).catch(() => null);
      check(info !== null, `piece ${piece.cid} is in the database but not on disk`);
      if (!info) continue;
      check(
        info.size === Number(piece.size),
        `piece ${piece.cid}: size ${info.size} != ${piece.size}`,
      );
      // Pieces are acknowledged before they are hashed; the restarted server hashes the rest.
      check(piece.sha256 !== null, `piece ${piece.cid}: SHA-256 never computed`);
      check(await sha256OfFile(path) === piece.sha256, `piece ${piece.cid}: SHA-256 differs`);
    }
    const orphanDeals = db.prepare(
      "SELECT count(*) AS n FROM deals d LEFT JOIN pieces p ON p.cid = d.cid WHERE p.cid IS NULL",
    ).get() as { n: number };
    check(Number(orphanDeals.n) === 0, `${orphanDeals.n} deals point at missing pieces`);
    const dealBytes = db.prepare("SELECT coalesce(sum(size), 0) AS n FROM deals").get() as {
      n: number;
    };
    const usageBytes = db.prepare("SELECT coalesce(sum(bytes), 0) AS n FROM usage_daily").get() as {
      n: number;
    };
    check(
      Number(dealBytes.n) === Number(usageBytes.n),
      `usage counters (${usageBytes.n}) differ from the deals they count (${dealBytes.n})`,
    );
    const today = new Date().toISOString().slice(0, 10);
    const todayBytes = db.prepare(
      "SELECT coalesce(sum(bytes), 0) AS n FROM usage_daily WHERE day = ?",
    )
      .get(today) as { n: number };
    const limits = await (await fetch(`${url}/api/limits`)).json();
    check(
      limits.usedTodayBytes === Number(todayBytes.n),
      `after restart ${limits.usedTodayBytes} bytes are used or reserved, the counter says ${todayBytes.n}`,
    );
  } finally {
    db.close();
  }

  for (const upload of acknowledged.values()) {
    const response = await fetch(`${url}/p/${upload.cid}`);
    if (response.status !== 200) {
      check(false, `acknowledged upload ${upload.cid} answers ${response.status}`);
      await response.body?.cancel();
      continue;
    }
    const hash = createHash("sha256");
    for await (const part of response.body!) hash.update(part);
    check(hash.digest("hex") === sha256Of(upload), `acknowledged upload ${upload.cid} changed`);
  }
}

const dataDir = await Deno.makeTempDir({ prefix: "crash-test-" });
const acknowledged = new Map<string, Upload>();
let started = 0;
let interrupted = 0;
let counter = 0;
try {
  for (let iteration = 1; iteration <= iterations; iteration++) {
    const server = await spawnServer(dataDir, [
      "--sponsored-daily-cap",
      "100GiB",
      "--log-requests",
      "false",
    ]);
    try {
      await checkInvariants(server.url, dataDir, acknowledged);
      const uploads: Upload[] = Array.from({ length: 3 + Math.floor(random() * 6) }, () => {
        // A fifth re-send an acknowledged piece (dedupe path); the rest are new.
        const known = [...acknowledged.values()];
        if (known.length > 0 && random() < 0.2) return known[Math.floor(random() * known.length)];
        const size = Math.max(1, Math.floor(random() ** 2 * 48 * 1024 * KIB));
        return { cid: `crash${seed}x${counter++}`, size, fill: Math.floor(random() * 256) };
      });
      started += uploads.length;
      const inFlight = uploads.map(async (upload) => {
        try {
          const result = await streamUpload({
            url: server.url,
            cid: upload.cid,
            size: upload.size,
            chunk: chunkFor(upload.fill),
          });
          if (result.status === 200) acknowledged.set(upload.cid, upload);
          else interrupted++;
        } catch {
          interrupted++;
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 5 + random() * 120));
      server.process.kill("SIGKILL");
      await Promise.all(inFlight);
    } finally {
      await server[Symbol.asyncDispose]();
    }
    if (failures.length > 0) break;
  }
  if (failures.length === 0) {
    await using last = await spawnServer(dataDir, ["--log-requests", "false"]);
    await checkInvariants(last.url, dataDir, acknowledged);
  }
} finally {
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}

console.log(
  `crash test: ${iterations} SIGKILLs (seed ${seed}), ${started} uploads started, ` +
    `${acknowledged.size} acknowledged and all intact, ${interrupted} cut off by the kill`,
);
if (iterations >= 3 && interrupted === 0) {
  failures.push("no upload was cut off by a kill: the run exercised no crash mid-upload");
}
if (failures.length > 0) {
  console.error(`FAILED:\n- ${failures.join("\n- ")}`);
  Deno.exit(1);
}
console.log("nothing lost");
