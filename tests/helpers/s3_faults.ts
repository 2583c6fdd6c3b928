/**
 * A real S3 whose gateway a test may silence (SIGSTOP) or stop (connections
 * refused): a Ceph cluster of the test file's own (scripts/lib/radosgw.ts),
 * never the shared one (STORAGE_TEST_S3_*), which other tests are using. A
 * fixture like tests/helpers/s3.ts's own cluster: started by the first test
 * that asks for a bucket (10 to 20 s, in that test's time), shared by the
 * file's later tests, and killed by PID when the file's module unloads.
 *
 * Each test gets a bucket of its own on it; buckets go with the cluster.
 */
import { missingRadosgwBinaries } from "../../scripts/lib/radosgw.ts";
import type { RadosgwGateway } from "../../scripts/lib/radosgw.ts";
import { accessOf, clusterOnFirstUse, signed } from "./s3.ts";
import type { TestBucket } from "./s3.ts";

export interface FaultyBucket extends TestBucket {
  /** The gateway every request to the bucket goes through. */
  gateway: RadosgwGateway;
}

/** Whether these tests run: Ceph installed, or CI (where its absence must fail). */
export function faultyS3Available(): boolean {
  return missingRadosgwBinaries().length === 0 || Deno.env.get("CI") === "true";
}

const fileCluster = clusterOnFirstUse();

/** A new bucket on the file's own cluster, which starts on first use. */
export async function faultyBucket(): Promise<FaultyBucket> {
  const own = await fileCluster();
  const bucket = `fault-${crypto.randomUUID()}`;
  const s3 = accessOf(own);
  const created = await signed(s3, `/${bucket}`, { method: "PUT" });
  await created.body?.cancel();
  if (!created.ok) throw new Error(`create bucket ${bucket}: ${created.status}`);
  // The cluster and its buckets are thrown away together (stopFaultyS3).
  const dispose = () => Promise.resolve();
  return { ...s3, bucket, gateway: own.gateway, dispose, [Symbol.asyncDispose]: dispose };
}
