/**
 * A real S3 whose gateway a test may silence (SIGSTOP) or stop (connections
 * refused): a Ceph cluster of the test file's own (scripts/lib/radosgw.ts),
 * never the shared one of /tmp/s3.env or CI, which other tests are using.
 * Its start (10 to 20 s) is paid once per file: the first test that asks
 * starts it, `stopFaultyS3` (the file's last test) stops it, and an `unload`
 * handler kills it should that test not run.
 *
 * Each test gets a bucket of its own on it; buckets go with the cluster.
 */
import { missingRadosgwBinaries, startRadosgw } from "../../scripts/lib/radosgw.ts";
import type { RadosgwCluster, RadosgwGateway } from "../../scripts/lib/radosgw.ts";
import { signed } from "./s3.ts";
import type { TestBucket } from "./s3.ts";

export interface FaultyBucket extends TestBucket {
  /** The gateway every request to the bucket goes through. */
  gateway: RadosgwGateway;
}

/** Whether these tests run: Ceph installed, or CI (where its absence must fail). */
export function faultyS3Available(): boolean {
  return missingRadosgwBinaries().length === 0 || Deno.env.get("CI") === "true";
}

let cluster: Promise<RadosgwCluster> | null = null;

/** A new bucket on the file's own cluster, which starts on first use. */
export async function faultyBucket(): Promise<FaultyBucket> {
  if (cluster === null) {
    cluster = startRadosgw();
    const started = await cluster.catch(() => null);
    if (started) globalThis.addEventListener("unload", () => started.killSync());
  }
  const own = await cluster;
  const bucket = `fault-${crypto.randomUUID()}`;
  const s3 = {
    endpoint: own.endpoint,
    region: own.region,
    accessKeyId: own.accessKeyId,
    secretAccessKey: own.secretAccessKey,
  };
  const created = await signed(s3, `/${bucket}`, { method: "PUT" });
  await created.body?.cancel();
  if (!created.ok) throw new Error(`create bucket ${bucket}: ${created.status}`);
  // The cluster and its buckets are thrown away together (stopFaultyS3).
  const dispose = () => Promise.resolve();
  return { ...s3, bucket, gateway: own.gateway, dispose, [Symbol.asyncDispose]: dispose };
}

/** Stops the file's cluster, if it started one. */
export async function stopFaultyS3(): Promise<void> {
  const started = await cluster?.catch(() => null);
  cluster = null;
  await started?.stop();
}
