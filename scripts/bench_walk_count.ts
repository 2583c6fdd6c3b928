/**
 * Bench: what a gateway CAR answer's count costs the server when the DAG is
 * past --ipfs-max-walk-blocks (the walk is counted first and refused 413), as
 * the second pass's "CAR blocks" attack asks for it: a CAR of 200,000 leaves
 * of 8 bytes under 200 dag-cbor nodes, then walks of it, one at a time and
 * four at once, with a client beside them asking for a 1 KiB piece (answered
 * from memory, so only a busy event loop delays it). Against --base, another
 * checkout (the commit before), both servers alike, alternating rounds.
 * Reported: the server's CPU per walk, the walks' wall time, and the client's
 * median, p99 and longest answer during the four-at-once walks.
 *
 *   deno run -A scripts/bench_walk_count.ts --base /tmp/base/ [--rounds 3]
 *
 * Talks only to 127.0.0.1 and stops only what it started, by PID.
 */
import { cpuSecondsOf } from "./lib/measure.ts";
import { spawnServer } from "./lib/spawn_server.ts";
import { blockCar } from "./bench_attack_surfaces.ts";
import { summarize } from "./bench_piece_cid.ts";

const LEAVES = 200_000;
const WALKS_ALONE = 5;
const FOUR_AT_ONCE_ROUNDS = 4;

async function walk(url: string, root: string, from: string): Promise<number> {
  using client = Deno.createHttpClient({ localAddress: from });
  const response = await fetch(`${url}/ipfs/${root}?format=car`, { client });
  await response.body?.cancel();
  return response.status;
}

async function measure(root: string | undefined) {
  const dataDir = await Deno.makeTempDir({ prefix: "bench-walk-" });
  await using server = await spawnServer(dataDir, [
    "--sponsored-car-max-blocks",
    String(LEAVES + 1000),
    "--sponsored-daily-cap",
    "10GiB",
  ], { root });
  const { root: dagRoot, car } = blockCar(LEAVES);
  const stored = await fetch(`${server.url}/api/upload?cid=bafkbenchwalkcount`, {
    method: "POST",
    headers: { "content-type": "application/vnd.ipld.car" },
    body: car,
  });
  if (stored.status !== 200) throw new Error(`upload: ${await stored.text()}`);
  const small = await fetch(`${server.url}/api/upload?cid=bafkbenchwalkprobe`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(1024).fill(7),
  });
  if (small.status !== 200) throw new Error(`probe piece: ${await small.text()}`);
  const pid = server.process.pid;
  const cpuBefore = cpuSecondsOf(pid) * 1000;
  const started = performance.now();
  for (let i = 0; i < WALKS_ALONE; i++) {
    const status = await walk(server.url, dagRoot.toString(), "127.0.0.60");
    if (status !== 413) throw new Error(`walk answered ${status}`);
  }
  const aloneMs = (performance.now() - started) / WALKS_ALONE;
  const cpuPerWalk = (cpuSecondsOf(pid) * 1000 - cpuBefore) / WALKS_ALONE;
  // Four at once (two addresses, two each: the per-address cap), a client beside them.
  const latencies: number[] = [];
  let walking = true;
  const client = (async () => {
    using http = Deno.createHttpClient({ localAddress: "127.0.0.70" });
    while (walking) {
      const t = performance.now();
      const response = await fetch(`${server.url}/p/bafkbenchwalkprobe`, { client: http });
      await response.arrayBuffer();
      latencies.push(performance.now() - t);
    }
  })();
  const fourStarted = performance.now();
  for (let round = 0; round < FOUR_AT_ONCE_ROUNDS; round++) {
    await Promise.all(
      ["127.0.0.61", "127.0.0.61", "127.0.0.62", "127.0.0.62"].map((from) =>
        walk(server.url, dagRoot.toString(), from)
      ),
    );
  }
  const fourMs = (performance.now() - fourStarted) / FOUR_AT_ONCE_ROUNDS;
  walking = false;
  await client;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  return {
    cpuPerWalkMs: cpuPerWalk,
    walkAloneMs: Math.round(aloneMs),
    fourAtOnceMs: Math.round(fourMs),
    client: summarize(latencies),
  };
}

if (import.meta.main) {
  const at = (name: string) => Deno.args.indexOf(`--${name}`);
  const base = at("base") === -1 ? undefined : Deno.args[at("base") + 1];
  const rounds = at("rounds") === -1 ? 3 : Number(Deno.args[at("rounds") + 1]);
  const results: Record<string, unknown[]> = { ours: [], before: [] };
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? ["ours", "before"] : ["before", "ours"]) {
      if (name === "before" && base === undefined) continue;
      const figures = await measure(name === "ours" ? undefined : base);
      console.error(name, JSON.stringify(figures));
      results[name].push(figures);
    }
  }
  console.log(JSON.stringify(results, null, 2));
}
