/**
 * Load and soak: a mixed workload at 64 concurrent connections against the
 * real server (start task's flags) for a bounded time, then checks that every
 * upload answered 200 is retrievable byte-identical. Reports req/s, p99, 5xx,
 * and the server's RSS from the end of the first minute (or first half) to the
 * end, with the curve every 10 s (time, requests done, RSS): a leak climbs with
 * the requests, a warm-up flattens. The first minute is warm-up (runs of 60 s
 * split at 30 s grew 21-28 MiB that 120 s runs did not grow after their 60th
 * second), so a check of growth wants a run of 120 s. Talks only to 127.0.0.1;
 * stops the server it started.
 *
 *   deno run -A scripts/soak.ts [--seconds 120] [--connections 64] [--max-growth-mib 50]
 *
 * Mix: 45% GET 1 KiB piece, 20% GET 1 MiB piece, 12% sponsored 1 MiB upload,
 * 12% token 1 MiB upload, 6% GET /api/files, 5% signup; spread over 16 client
 * addresses (127.0.0.10-25), each with a token of its own.
 */
import { createHash } from "node:crypto";
import { rssBytes, spawnServer } from "./lib/spawn_server.ts";
import { scriptArgs } from "./lib/args.ts";

const opts = scriptArgs(
  "Usage: deno run -A scripts/soak.ts [--seconds 120] [--connections 64] [--max-growth-mib 50]",
  {
    seconds: { type: "number", default: 120, min: 1 },
    connections: { type: "number", default: 64, integer: true, min: 1 },
    "max-growth-mib": { type: "number", default: 50, min: 0 },
  },
);
const { seconds, connections } = opts;
const maxGrowthMiB = opts["max-growth-mib"];
const MIB = 1024 * 1024;
/** Distinct client addresses the connections are spread over. */
const CLIENTS = 16;

function bytesFor(fill: number, size: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + fill) & 0xff;
  return out;
}
function medianOfLast(samples: { mib: number }[], count: number): number {
  const last = samples.slice(-count).map((s) => s.mib).sort((a, b) => a - b);
  return last[Math.floor(last.length / 2)] ?? 0;
}
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

const dataDir = await Deno.makeTempDir({ prefix: "soak-" });
const latencies: number[] = [];
const statuses = new Map<number, number>();
/** The first few 5xx answers' bodies: which error code, so a failed soak says why. */
const fivexxSamples: string[] = [];
const acknowledged: { cid: string; sha256: string }[] = [];
const rssSamples: { t: number; mib: number; requests: number }[] = [];
let networkErrors = 0;
/** The first few network errors, named in the report: a count alone says nothing of the cause. */
const networkErrorSamples: string[] = [];

try {
  await using server = await spawnServer(dataDir, [
    "--sponsored-daily-cap",
    "1000GiB",
    "--token-daily-cap",
    "1000GiB",
    "--signup-limit",
    "1000000",
  ]);
  // The load is many clients, not one: each connection speaks from one of
  // CLIENTS loopback addresses, so the per-client bounds (a quarter of the
  // upload pool, uploads per address) see what they would on the open
  // internet, and a 503 here is the service failing, not one client's share.
  const clients = Array.from(
    { length: CLIENTS },
    (_, i) => Deno.createHttpClient({ localAddress: `127.0.0.${10 + i}` }),
  );
  const small = bytesFor(1, 1024);
  const big = bytesFor(2, MIB);
  const post = (
    path: string,
    body: BodyInit,
    headers: Record<string, string> = {},
    client = clients[0],
  ) => fetch(`${server.url}${path}`, { method: "POST", body, headers, client });
  await post("/api/upload?cid=soaksmall01", small, { "content-type": "a/b" });
  await post("/api/upload?cid=soakbig0001", big, { "content-type": "a/b" });
  // Each client has its own token, as each user of the service would.
  const tokens = await Promise.all(clients.map(async (client, i) => {
    const response = await post(
      "/api/auth/signup",
      JSON.stringify({ email: `soak-client${i}@example.org`, label: "soak", quotaMb: 1024000 }),
      {},
      client,
    );
    return (await response.json()).token as string;
  }));
  const uploadBody = bytesFor(3, MIB);
  const uploadSha = sha(uploadBody);

  let counter = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const sampler = (async () => {
    while (performance.now() < deadline) {
      rssSamples.push({
        t: (performance.now() - started) / 1000,
        mib: ((await rssBytes(server.process.pid)) ?? 0) / MIB,
        requests: latencies.length,
      });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();

  const one = async (client: Deno.HttpClient, token: string): Promise<void> => {
    const pick = Math.random();
    const t0 = performance.now();
    let response: Response;
    let uploaded: string | null = null;
    try {
      if (pick < 0.45) response = await fetch(`${server.url}/p/soaksmall01`, { client });
      else if (pick < 0.65) response = await fetch(`${server.url}/p/soakbig0001`, { client });
      else if (pick < 0.89) {
        const cid = `soakup${counter++}x`;
        const headers: Record<string, string> = { "content-type": "application/octet-stream" };
        if (pick >= 0.77) headers.authorization = `Bearer ${token}`;
        response = await post(`/api/upload?cid=${cid}`, uploadBody, headers, client);
        uploaded = cid;
      } else if (pick < 0.95) {
        response = await fetch(`${server.url}/api/files?limit=10`, {
          headers: { authorization: `Bearer ${token}` },
          client,
        });
      } else {
        response = await post(
          "/api/auth/signup",
          JSON.stringify({ email: `soak${counter++}@example.org`, label: "soak" }),
          {},
          client,
        );
      }
      const body = await response.arrayBuffer();
      if (response.status >= 500 && fivexxSamples.length < 5) {
        fivexxSamples.push(`${response.status}: ${new TextDecoder().decode(body).slice(0, 200)}`);
      }
    } catch (error) {
      networkErrors++;
      if (networkErrorSamples.length < 5) {
        networkErrorSamples.push(
          `${pick < 0.65 ? "GET" : pick < 0.89 ? "upload" : "other"}: ${error}`,
        );
      }
      return;
    }
    latencies.push(performance.now() - t0);
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    if (uploaded && response.status === 200) {
      acknowledged.push({ cid: uploaded, sha256: uploadSha });
    }
  };

  await Promise.all(Array.from({ length: connections }, async (_, i) => {
    while (performance.now() < deadline) await one(clients[i % CLIENTS], tokens[i % CLIENTS]);
  }));
  for (const client of clients) client.close();
  await sampler;
  const elapsed = (performance.now() - started) / 1000;

  // Nothing lost: every acknowledged upload is there, byte for byte.
  let lost = 0;
  for (const { cid, sha256 } of acknowledged) {
    const response = await fetch(`${server.url}/p/${cid}`);
    const body = new Uint8Array(await response.arrayBuffer());
    if (response.status !== 200 || sha(body) !== sha256) lost++;
  }

  latencies.sort((a, b) => a - b);
  const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
  // RSS saw-tooths with the garbage collector and steps as the heap resizes, so each end of
  // the growth is the median of the ten samples (10 s) up to it, not one that may sit on a tooth.
  const splitAt = Math.min(60, seconds / 2);
  const early = medianOfLast(rssSamples.filter((s) => s.t <= splitAt), 10);
  const late = medianOfLast(rssSamples, 10);
  const report = {
    seconds: Math.round(elapsed),
    connections,
    requests: latencies.length,
    requestsPerSecond: Math.round(latencies.length / elapsed),
    p99Ms: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10,
    statuses: Object.fromEntries(statuses),
    fivexx,
    fivexxSamples,
    networkErrors,
    networkErrorSamples,
    uploadsAcknowledged: acknowledged.length,
    uploadsLost: lost,
    rssMiB: { [`at ${Math.round(splitAt)} s`]: Math.round(early), atEnd: Math.round(late) },
    rssGrowthMiB: Math.round(late - early),
    rssEvery10s: rssSamples.filter((_, i) => i % 10 === 0).map((s) =>
      `${Math.round(s.t)} s ${s.requests} req ${Math.round(s.mib)} MiB`
    ),
  };
  console.log(JSON.stringify(report, null, 2));
  const ok = fivexx === 0 && lost === 0 && networkErrors === 0 &&
    report.rssGrowthMiB < maxGrowthMiB;
  console.log(ok ? "soak: nothing lost, no 5xx" : "soak: FAILED");
  if (!ok) Deno.exitCode = 1;
} finally {
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
