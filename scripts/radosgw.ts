/**
 * A real S3 (Ceph radosgw, one node, in a temp directory) for a whole test or
 * CI run, so the S3 tests share one cluster instead of starting one per test
 * file. It prints, once S3 answers, the environment the tests read as shell
 * `export` lines on stdout (progress goes to stderr), then runs until SIGINT
 * or SIGTERM, when it stops every process it started, by PID, and removes
 * its directory. See scripts/lib/radosgw.ts for the cluster itself.
 *
 *   deno run -A scripts/radosgw.ts [--write-env s3.env] [--attempts 3]
 *   deno run -A scripts/radosgw.ts --probe     # start, one PUT and GET, stop: exit 0 or 1
 *
 * --write-env also writes the export lines to a file, atomically once ready, so
 * a CI script can start this in the background and wait for the file:
 *
 *   deno run -A scripts/radosgw.ts --write-env "$f" & pid=$!
 *   while [ ! -s "$f" ] && kill -0 "$pid" 2>/dev/null; do sleep 1; done
 *   if [ -s "$f" ]; then . "$f"; else export STORAGE_TEST_S3=unavailable; fi
 *   …
 *   kill "$pid"; wait "$pid"
 *
 * Exits 1 when the cluster could not start after its tries, or when one of its
 * daemons dies while it runs (the tests would fail confusingly otherwise).
 * It also stops when the process that started it is gone (its parent PID
 * changes): then nobody is left to stop it. That covers a CI script that kills
 * `$!` of a backgrounded shell function, which is a subshell, not this process;
 * STORAGE_TEST_S3_PID is this process.
 */
import { AwsClient } from "aws4fetch";
import { scriptArgs } from "./lib/args.ts";
import { startRadosgw } from "./lib/radosgw.ts";
import type { RadosgwCluster } from "./lib/radosgw.ts";

const USAGE = `Usage: deno run -A scripts/radosgw.ts [--write-env FILE] [--attempts 3] [--probe]
  Starts a one-node Ceph cluster with radosgw on 127.0.0.1, prints STORAGE_TEST_S3_* as export
  lines and runs until SIGINT/SIGTERM. --probe: start, one PUT and GET, stop, exit 0 or 1.`;
const opts = scriptArgs(USAGE, {
  "write-env": { type: "string" },
  attempts: { type: "number", default: 3, integer: true, min: 1 },
  probe: { type: "boolean" },
});

/** How often a running cluster's daemons are checked for having died. */
const WATCH_MS = 2000;

const stopping = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => stopping.abort(new Error(`stopped by ${signal}`)));
}
const parentPid = Deno.ppid;
const parentWatch = setInterval(() => {
  if (Deno.ppid !== parentPid) stopping.abort(new Error(`its parent (PID ${parentPid}) is gone`));
}, WATCH_MS);
Deno.unrefTimer(parentWatch);

let cluster: RadosgwCluster;
try {
  cluster = await startRadosgw({
    attempts: opts.attempts,
    onProgress: (line) => console.error(line),
    signal: stopping.signal,
  });
} catch (error) {
  console.error(`radosgw: ${(error as Error).message}`);
  Deno.exit(stopping.signal.aborted ? 0 : 1);
}
console.error(
  `radosgw: ready at ${cluster.endpoint} after ${(cluster.startMs / 1000).toFixed(1)} s ` +
    `(try ${cluster.attempt}); PIDs ${cluster.pids.join(", ")}; directory ${cluster.dir}`,
);

let status = 0;
try {
  if (opts.probe) {
    status = await probe(cluster) ? 0 : 1;
  } else {
    await publish(cluster);
    status = await runUntilStopped(cluster);
  }
} finally {
  if (stopping.signal.aborted) console.error(`radosgw: ${stopping.signal.reason.message}`);
  await cluster.stop();
  if (opts["write-env"]) await Deno.remove(opts["write-env"]).catch(() => {});
  console.error("radosgw: stopped");
}
Deno.exit(status);

/** Prints the export lines, and writes them to --write-env (a rename, so readers see all or none). */
async function publish(cluster: RadosgwCluster): Promise<void> {
  const lines = [
    `export STORAGE_TEST_S3_ENDPOINT=${cluster.endpoint}`,
    `export STORAGE_TEST_S3_REGION=${cluster.region}`,
    `export STORAGE_TEST_S3_ACCESS_KEY_ID=${cluster.accessKeyId}`,
    `export STORAGE_TEST_S3_SECRET_ACCESS_KEY=${cluster.secretAccessKey}`,
    `# SIGTERM this PID to stop the cluster; it removes STORAGE_TEST_S3_DIR.`,
    `export STORAGE_TEST_S3_PID=${Deno.pid}`,
    `export STORAGE_TEST_S3_DIR=${cluster.dir}`,
  ].join("\n") + "\n";
  console.log(lines);
  const file = opts["write-env"];
  if (file) {
    await Deno.writeTextFile(`${file}.partial`, lines, { mode: 0o600 });
    await Deno.rename(`${file}.partial`, file);
  }
}

/** Waits for SIGINT/SIGTERM (exit status 0) or for a daemon to die (exit status 1). */
async function runUntilStopped(cluster: RadosgwCluster): Promise<number> {
  while (!stopping.signal.aborted) {
    const dead = cluster.exitedDaemon();
    if (dead !== null) {
      console.error(`radosgw: ${dead} exited; stopping the cluster (logs were in ${cluster.dir})`);
      return 1;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, WATCH_MS);
      stopping.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  }
  return 0;
}

/** One PUT and GET in a bucket of its own, with the cluster's keys. */
async function probe(cluster: RadosgwCluster): Promise<boolean> {
  const client = new AwsClient({
    accessKeyId: cluster.accessKeyId,
    secretAccessKey: cluster.secretAccessKey,
    region: cluster.region,
    service: "s3",
    retries: 0,
  });
  const bucket = `${cluster.endpoint}/cli-probe-${crypto.randomUUID()}`;
  const sent = `probe ${crypto.randomUUID()}`;
  try {
    for (
      const [method, url, body] of [
        ["PUT", bucket, undefined],
        ["PUT", `${bucket}/object`, new TextEncoder().encode(sent)],
      ] as const
    ) {
      const response = await client.fetch(url, { method, body });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status}`);
    }
    const got = await client.fetch(`${bucket}/object`);
    const text = await got.text();
    if (!got.ok || text !== sent) throw new Error(`GET gave ${got.status} "${text}"`);
    console.error("radosgw: probe ok (PUT and GET of one object)");
    return true;
  } catch (error) {
    console.error(`radosgw: probe failed: ${(error as Error).message}`);
    return false;
  }
}
