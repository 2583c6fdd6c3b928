/**
 * Bench workload 12: 1 KiB uploads per second with PostgreSQL as the
 * metadata store against SQLite, same run, same machine. Each backend gets a
 * fresh server process (the start task's permissions) with pieces on disk,
 * and `--concurrency` clients upload distinct 1 KiB pieces for `--seconds`.
 * PostgreSQL runs durable (fsync on), as SQLite does (synchronous=FULL), so
 * both pay for a commit that survives power loss.
 *
 *   deno run -A scripts/bench_metadata.ts [--seconds 5] [--concurrency 16]
 */
import { scriptArgs } from "./lib/args.ts";
import { startPostgres } from "./lib/postgres_server.ts";
import { spawnServer } from "./lib/spawn_server.ts";

const opts = scriptArgs(
  "Usage: deno run -A scripts/bench_metadata.ts [--seconds 5] [--concurrency 16]",
  {
    seconds: { type: "number", default: 5, min: 1 },
    concurrency: { type: "number", default: 16, integer: true, min: 1 },
  },
);

export interface MetadataBenchResult {
  backend: string;
  uploads: number;
  uploadsPerSecond: number;
  failures: number;
}

async function measure(backend: string, args: string[]): Promise<MetadataBenchResult> {
  const dir = await Deno.makeTempDir({ prefix: `bench-metadata-${backend}-` });
  try {
    await using server = await spawnServer(dir, [
      "--log-requests",
      "false",
      "--sponsored-daily-cap",
      "100GiB",
      ...args,
    ]);
    let next = 0;
    let uploads = 0;
    let failures = 0;
    const deadline = performance.now() + opts.seconds * 1000;
    const started = performance.now();
    const client = async () => {
      while (performance.now() < deadline) {
        const n = next++;
        const body = new Uint8Array(1024);
        new DataView(body.buffer).setUint32(0, n);
        body[4] = backend.length;
        // An opaque cid per piece: this measures the records, not hashing.
        const cid = `bafkbench${backend}${n.toString(36).padStart(8, "0")}`;
        const response = await fetch(`${server.url}/api/upload?cid=${cid}`, {
          method: "POST",
          headers: { "content-type": "application/octet-stream" },
          body,
        });
        await response.body?.cancel();
        if (response.status === 200) uploads++;
        else failures++;
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, client));
    const seconds = (performance.now() - started) / 1000;
    return { backend, uploads, uploadsPerSecond: Math.round(uploads / seconds), failures };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

export async function benchMetadata(): Promise<MetadataBenchResult[]> {
  await using postgres = await startPostgres({ durable: true });
  const sqlite = await measure("sqlite", []);
  const pg = await measure("postgres", ["--database", postgres.url]);
  return [sqlite, pg];
}

if (import.meta.main) {
  const results = await benchMetadata();
  for (const r of results) {
    console.log(
      `${r.backend.padEnd(9)} ${String(r.uploadsPerSecond).padStart(6)} uploads/s ` +
        `(${r.uploads} in ${opts.seconds} s, ${opts.concurrency} clients, ${r.failures} failed)`,
    );
  }
  console.log(
    `postgres / sqlite: ${(results[1].uploadsPerSecond / results[0].uploadsPerSecond).toFixed(2)}`,
  );
}
