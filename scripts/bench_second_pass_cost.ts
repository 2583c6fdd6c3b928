/**
 * Bench: what the second pass's bounds (answers metered, CARs indexed in
 * slices, manifests kept, tus creations counted, the caller checked again
 * before a commit) cost on the normal load, against the service as it was
 * before them: a checkout of the earlier commit given with --base (e.g.
 * `git archive <commit> | tar -x -C /tmp/base`). Both servers alike, loaded
 * in turn, the order rotated each round so machine noise hits both: 1 KiB
 * retrievals (wrk, 64 connections), a 100 MiB upload, a 100 MiB download
 * (and the server's CPU for it), and a CAR upload of 64 blocks of 1 MiB.
 * Reported: each figure's median, and the ratio ours / before (goal >= 0.97 for
 * rates; for the server's CPU per operation, which a shared machine moves
 * less, lower is better).
 *
 *   deno run -A scripts/bench_second_pass_cost.ts --base /tmp/base [--rounds 5] [--seconds 5]
 *     [--retrievals-only]   (1 KiB retrievals alone: a change that costs every request, if anything)
 *
 * Talks only to 127.0.0.1 and stops only what it started, by PID.
 */
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { runWrk, wrkAvailable } from "./lib/wrk.ts";
import { cpuSecondsOf, rotated } from "./lib/measure.ts";
import { blockCar } from "./bench_attack_surfaces.ts";
import { MIB } from "../src/kernel/units.ts";

type Name = "ours" | "before";
type Figure =
  | "retrieve1KiB_rps"
  | "retrieve1KiB_serverCpuMsPer1000"
  | "upload100MiB_MiBps"
  | "upload100MiB_serverCpuMs"
  | "download100MiB_MiBps"
  | "download100MiB_serverCpuMs"
  | "carUpload64x1MiB_MiBps"
  | "carUpload64x1MiB_serverCpuMs";

const ARGS = ["--sponsored-daily-cap", "1TiB", "--sponsored-max-file-size", "1GiB"];

async function curlMiBps(url: string): Promise<number> {
  const out = await new Deno.Command("curl", {
    args: ["-s", "-o", "/dev/null", "-w", "%{speed_download}", url],
    stdout: "piped",
  }).output();
  return Number(new TextDecoder().decode(out.stdout)) / MIB;
}

/** A CAR of 64 raw blocks of 1 MiB under a dag-cbor node, as ipfs-car's leaves are sized. */
function carOf1MiBBlocks(): Uint8Array<ArrayBuffer> {
  return blockCar(64, MIB).car;
}

function emptyFigures(): Record<Figure, number[]> {
  return {
    retrieve1KiB_rps: [],
    retrieve1KiB_serverCpuMsPer1000: [],
    upload100MiB_MiBps: [],
    upload100MiB_serverCpuMs: [],
    download100MiB_MiBps: [],
    download100MiB_serverCpuMs: [],
    carUpload64x1MiB_MiBps: [],
    carUpload64x1MiB_serverCpuMs: [],
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)] * 10) / 10;
}

if (import.meta.main) {
  if (!wrkAvailable()) throw new Error("wrk is not installed");
  const at = (name: string) => Deno.args.indexOf(`--${name}`);
  if (at("base") === -1) throw new Error("--base DIR (a checkout of the commit before) is needed");
  const base = Deno.args[at("base") + 1].replace(/\/$/, "");
  const rounds = at("rounds") === -1 ? 5 : Number(Deno.args[at("rounds") + 1]);
  const seconds = at("seconds") === -1 ? 5 : Number(Deno.args[at("seconds") + 1]);
  const retrievalsOnly = Deno.args.includes("--retrievals-only");
  const baseSpawn = (await import(`${base}/scripts/lib/spawn_server.ts`))
    .spawnServer as typeof spawnServer;
  const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  try {
    await using ours = await spawnServer(dirs[0], ARGS);
    await using before = await baseSpawn(dirs[1], ARGS);
    const servers: [Name, SpawnedServer][] = [["ours", ours], ["before", before]];
    const chunk = new Uint8Array(MIB).map((_, i) => (i * 31) & 0xff);
    const car = carOf1MiBBlocks();
    for (const [, s] of servers) {
      await streamUpload({
        url: s.url,
        cid: "bafkcostsmall1kib",
        size: 1024,
        chunk: chunk.slice(0, 1024),
      });
      if (retrievalsOnly) continue;
      await streamUpload({ url: s.url, cid: "bafkcostbig100mib", size: 100 * MIB, chunk });
    }
    const figures: Record<Name, Record<Figure, number[]>> = {
      ours: emptyFigures(),
      before: emptyFigures(),
    };
    for (let round = 0; round < rounds; round++) {
      for (const [name, s] of rotated(servers, round)) {
        const f = figures[name];
        let cpu = cpuSecondsOf(s.process.pid) * 1000;
        const wrk = await runWrk({ url: `${s.url}/p/bafkcostsmall1kib`, connections: 64, seconds });
        f.retrieve1KiB_rps.push(wrk.requestsPerSecond);
        f.retrieve1KiB_serverCpuMsPer1000.push(
          (cpuSecondsOf(s.process.pid) * 1000 - cpu) / (wrk.requestsPerSecond * seconds / 1000),
        );
        if (retrievalsOnly) continue;
        cpu = cpuSecondsOf(s.process.pid) * 1000;
        let started = performance.now();
        chunk[0] = round;
        chunk[1] = name === "ours" ? 1 : 2;
        await streamUpload({ url: s.url, cid: `bafkcostup${round}x`, size: 100 * MIB, chunk });
        f.upload100MiB_MiBps.push(100 / ((performance.now() - started) / 1000));
        f.upload100MiB_serverCpuMs.push(cpuSecondsOf(s.process.pid) * 1000 - cpu);
        const cpuBefore = cpuSecondsOf(s.process.pid) * 1000;
        f.download100MiB_MiBps.push(await curlMiBps(`${s.url}/p/bafkcostbig100mib`));
        f.download100MiB_serverCpuMs.push(cpuSecondsOf(s.process.pid) * 1000 - cpuBefore);
        cpu = cpuSecondsOf(s.process.pid) * 1000;
        started = performance.now();
        const answer = await fetch(`${s.url}/api/upload?cid=bafkcostcar${round}x`, {
          method: "POST",
          headers: { "content-type": "application/vnd.ipld.car" },
          body: car,
        });
        await answer.body?.cancel();
        if (answer.status !== 200) throw new Error(`CAR upload: ${answer.status}`);
        f.carUpload64x1MiB_MiBps.push(car.length / MIB / ((performance.now() - started) / 1000));
        f.carUpload64x1MiB_serverCpuMs.push(cpuSecondsOf(s.process.pid) * 1000 - cpu);
      }
    }
    const result: Record<string, { ours: number; before: number; ratio: number }> = {};
    for (const figure of Object.keys(figures.ours) as Figure[]) {
      if (figures.ours[figure].length === 0) continue;
      const o = median(figures.ours[figure]);
      const b = median(figures.before[figure]);
      result[figure] = { ours: o, before: b, ratio: Math.round((o / b) * 100) / 100 };
    }
    console.log(JSON.stringify({ rounds, result, raw: figures }, null, 2));
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
