/**
 * A real S3 for the S3 driver's tests: Ceph radosgw (scripts/lib/radosgw.ts).
 *
 * Where it comes from:
 *   - STORAGE_TEST_S3_ENDPOINT, STORAGE_TEST_S3_ACCESS_KEY_ID and
 *     STORAGE_TEST_S3_SECRET_ACCESS_KEY set (CI starts one cluster for the
 *     whole run with scripts/radosgw.ts): that one;
 *   - otherwise a cluster of the test file's own: a fixture, started by the
 *     first test that asks for a bucket (10 to 20 s, in that test's time) and
 *     shared by the file's later tests. Its processes are unref'd children, so
 *     a cluster spanning the file's tests is no test's leak; it goes when the
 *     file's module unloads (after its last test, whichever tests a --filter
 *     ran), killed by PID and its directory removed. No test exists to start
 *     or stop it.
 *
 * Each test gets a fresh bucket (`s3ForTests`), emptied and removed after it,
 * so tests share nothing but the cluster.
 *
 * Whether S3 tests run at all (`s3Available`): not when STORAGE_TEST_S3 is
 * "unavailable" (CI sets it, after a loud banner, when its cluster would not
 * come up); not on a developer's machine without the Ceph packages; but in CI
 * (CI=true), missing packages fail the tests instead of hiding them.
 */
import { AwsClient } from "aws4fetch";
import {
  missingRadosgwBinaries,
  s3AccessFromEnvironment,
  startRadosgw,
} from "../../scripts/lib/radosgw.ts";
import type { RadosgwCluster, S3Access } from "../../scripts/lib/radosgw.ts";

export type S3Endpoint = S3Access;

export interface TestBucket extends S3Endpoint, AsyncDisposable {
  bucket: string;
  /** Aborts its multipart uploads, deletes its objects and the bucket. */
  dispose(): Promise<void>;
}

/** Why S3 tests are skipped here, or null when they run. */
export function s3UnavailableReason(): string | null {
  if (Deno.env.get("STORAGE_TEST_S3") === "unavailable") {
    return "STORAGE_TEST_S3=unavailable (the run's radosgw did not come up)";
  }
  if (s3AccessFromEnvironment() !== null) return null;
  const missing = missingRadosgwBinaries();
  if (missing.length > 0 && Deno.env.get("CI") !== "true") {
    return `${missing.join(", ")} not installed (Debian: radosgw ceph-mon ceph-osd ceph-common)`;
  }
  return null;
}

export function s3Available(): boolean {
  return s3UnavailableReason() === null;
}

/**
 * A Ceph cluster of the test file's own, behind a getter: started by the
 * first call (10 to 20 s, in that test's time), the same one for later calls,
 * SIGKILLed by PID when the file's module unloads (memstore keeps nothing to
 * lose). Each caller of this function gets a cluster of its own.
 */
export function clusterOnFirstUse(): () => Promise<RadosgwCluster> {
  let cluster: Promise<RadosgwCluster> | null = null;
  return () => {
    if (cluster === null) {
      cluster = startRadosgw();
      // `unload` cannot wait: hence killSync.
      cluster.then(
        (started) => globalThis.addEventListener("unload", () => started.killSync()),
        () => {}, // every test that asks sees the failure
      );
    }
    return cluster;
  };
}

/** How a client reaches a cluster's S3: its endpoint, region and keys. */
export function accessOf(cluster: RadosgwCluster): S3Endpoint {
  const { endpoint, region, accessKeyId, secretAccessKey } = cluster;
  return { endpoint, region, accessKeyId, secretAccessKey };
}

const ownCluster = clusterOnFirstUse();

/** The S3 this file's tests use: the run's (from the environment), or the file's own cluster. */
async function fileS3(): Promise<S3Endpoint> {
  return s3AccessFromEnvironment() ?? accessOf(await ownCluster());
}

/**
 * A fresh, empty bucket of its own on the file's S3 (the fixture every S3 test
 * uses: `await using bucket = await s3ForTests()`), removed with what it holds
 * when disposed.
 */
export async function s3ForTests(): Promise<TestBucket> {
  const s3 = await fileS3();
  const bucket = `test-${crypto.randomUUID()}`;
  await expectOk(await signed(s3, `/${bucket}`, { method: "PUT" }), `create bucket ${bucket}`);
  const dispose = () => removeBucket(s3, bucket);
  return { ...s3, bucket, dispose, [Symbol.asyncDispose]: dispose };
}

/** A test on a fresh bucket of its own (s3ForTests), ignored where S3 tests do not run. */
export function s3Test(name: string, fn: (bucket: TestBucket) => Promise<void> | void): void {
  Deno.test({
    name,
    ignore: !s3Available(),
    async fn() {
      await using bucket = await s3ForTests();
      await fn(bucket);
    },
  });
}

/**
 * A request signed with the test keys, straight to S3 (not through the
 * driver): for setting up and checking what the driver must not see or do.
 * `path` is "/bucket/key?query".
 */
export async function signed(
  s3: S3Endpoint,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  const client = new AwsClient({ ...s3, service: "s3", retries: 0 });
  return await client.fetch(`${s3.endpoint}${path}`, {
    ...init,
    signal: AbortSignal.timeout(30_000),
  });
}

/** Keys of the objects under prefix in bucket (one page: tests hold few). */
export async function objectKeys(s3: TestBucket, prefix = ""): Promise<string[]> {
  const xml = await expectOk(
    await signed(s3, `/${s3.bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}`),
    "list objects",
  );
  return leaves(xml, "Key").sort();
}

/** Keys of the multipart uploads in progress under prefix in bucket. */
export async function uploadKeys(s3: TestBucket, prefix = ""): Promise<string[]> {
  const xml = await expectOk(
    await signed(s3, `/${s3.bucket}?uploads&prefix=${encodeURIComponent(prefix)}`),
    "list multipart uploads",
  );
  return blocks(xml, "Upload").flatMap((upload) => leaves(upload, "Key")).sort();
}

/** Starts a multipart upload of key and sends it one part: what a killed upload leaves. */
export async function abandonedUpload(s3: TestBucket, key: string): Promise<string> {
  const started = await expectOk(
    await signed(s3, `/${s3.bucket}/${key}?uploads`, { method: "POST" }),
    `start an upload of ${key}`,
  );
  const uploadId = leaves(started, "UploadId")[0];
  await expectOk(
    await signed(s3, `/${s3.bucket}/${key}?partNumber=1&uploadId=${encodeURIComponent(uploadId)}`, {
      method: "PUT",
      body: new Uint8Array(1024).fill(7),
    }),
    `send a part of ${key}`,
  );
  return uploadId;
}

/** Puts an object straight into the bucket. */
export async function putObject(s3: TestBucket, key: string, body: Uint8Array<ArrayBuffer>) {
  await expectOk(await signed(s3, `/${s3.bucket}/${key}`, { method: "PUT", body }), `PUT ${key}`);
}

/** The server's flags for a test bucket (its keys go in the environment: s3ServerKeys). */
export function s3ServerFlags(bucket: TestBucket): string[] {
  return [
    "--store",
    "s3",
    "--s3-endpoint",
    bucket.endpoint,
    "--s3-bucket",
    bucket.bucket,
    "--s3-region",
    bucket.region,
  ];
}

/** The environment that gives a server (or main.ts command) a test bucket's keys. */
export function s3ServerKeys(bucket: TestBucket): Record<string, string> {
  return {
    STORAGE_S3_ACCESS_KEY_ID: bucket.accessKeyId,
    STORAGE_S3_SECRET_ACCESS_KEY: bucket.secretAccessKey,
  };
}

async function removeBucket(s3: S3Endpoint, bucket: string): Promise<void> {
  const xmlOf = async (query: string) =>
    await expectOk(await signed(s3, `/${bucket}?${query}`), `list ${bucket}`);
  for (const upload of blocks(await xmlOf("uploads"), "Upload")) {
    const [key] = leaves(upload, "Key");
    const [uploadId] = leaves(upload, "UploadId");
    const path = `/${bucket}/${key}?uploadId=${encodeURIComponent(uploadId)}`;
    await expectOk(await signed(s3, path, { method: "DELETE" }), `abort ${key}`);
  }
  // Test buckets hold far fewer than a page (1000) of objects.
  for (const key of leaves(await xmlOf("list-type=2"), "Key")) {
    await expectOk(await signed(s3, `/${bucket}/${key}`, { method: "DELETE" }), `delete ${key}`);
  }
  await expectOk(await signed(s3, `/${bucket}`, { method: "DELETE" }), `delete bucket ${bucket}`);
}

/** The answer's body; throws naming `what` unless the status is 2xx. */
async function expectOk(response: Response, what: string): Promise<string> {
  const body = await response.text();
  if (!response.ok) throw new Error(`${what}: ${response.status} ${body}`);
  return body;
}

function blocks(xml: string, tag: string): string[] {
  return Array.from(xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g")), (m) => m[1]);
}

function leaves(xml: string, tag: string): string[] {
  return blocks(xml, tag).map((text) => text.replaceAll("&amp;", "&"));
}
