/**
 * The S3 driver against a real S3 (Ceph radosgw, tests/helpers/s3.ts): the
 * store conformance suite every driver passes, then what only S3 has:
 * multipart uploads and copies, what a failed or killed upload leaves (listed
 * through the S3 API, not the driver), credentials, prefixes. A bucket per
 * test, on this file's cluster (tests/helpers/s3.ts: the first test that asks
 * for a bucket brings it up, unless STORAGE_TEST_S3_ENDPOINT names one).
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { MIB, seededBytes, sha256Hex } from "../helpers/bytes.ts";
import { FakeClock } from "../helpers/clock.ts";
import {
  abandonedUpload,
  objectKeys,
  putObject,
  s3ForTests,
  s3Test,
  s3UnavailableReason,
  uploadKeys,
} from "../helpers/s3.ts";
import type { TestBucket } from "../helpers/s3.ts";
import { runStoreConformance } from "./store_conformance.ts";
import { runPartialConformance } from "./partial_conformance.ts";
import type { StoreFixture } from "./store_conformance.ts";
import { eventually, within } from "../helpers/wait.ts";
import { StoreError } from "../../src/driver/driver.ts";
import { S3Store } from "../../src/driver/s3/s3_store.ts";
import type { S3StoreOptions } from "../../src/driver/s3/s3_store.ts";
import { errorOfAnswer } from "../../src/driver/s3/s3_errors.ts";

const unavailable = s3UnavailableReason();
const ignore = unavailable !== null;
if (ignore) console.warn(`S3 driver tests ignored: ${unavailable}`);

/** A store on the test bucket; options override the defaults. */
function storeOn(bucket: TestBucket, options: Partial<S3StoreOptions> = {}): S3Store {
  return new S3Store({
    endpoint: bucket.endpoint,
    region: bucket.region,
    bucket: bucket.bucket,
    accessKeyId: bucket.accessKeyId,
    secretAccessKey: bucket.secretAccessKey,
    ...options,
  });
}

async function s3Fixture(): Promise<StoreFixture & { bucket: TestBucket }> {
  const bucket = await s3ForTests();
  return { bucket, store: storeOn(bucket), [Symbol.asyncDispose]: () => bucket.dispose() };
}

/** What a failed stage must leave in the bucket: no multipart upload and no object. */
async function assertNothingLeft(bucket: TestBucket): Promise<void> {
  assertEquals(await uploadKeys(bucket), []);
  assertEquals(await objectKeys(bucket), []);
}

/** The bytes as a stream of uneven chunks (as a network body arrives). */
function unevenStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for (let offset = 0, n = 0; offset < bytes.length; n++) {
    const size = [65_536, 1000, 300_000, 7][n % 4];
    chunks.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return ReadableStream.from(chunks);
}

async function stageFailure(promise: Promise<unknown>): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    assertOk(error instanceof StoreError, `expected a StoreError, got ${error}`);
    return error;
  }
  throw new Error("expected the stage to fail");
}

if (!ignore) runStoreConformance("s3", s3Fixture);
if (!ignore) runPartialConformance("s3", s3Fixture);

s3Test(
  "s3 store: a body of several parts round-trips byte-identical, staging left empty",
  async (bucket) => {
    const store = storeOn(bucket, { partSizeBytes: 5 * MIB, partConcurrency: 2 });
    const bytes = seededBytes(17 * MIB + 12_345, 1);
    const staged = await store.stage(unevenStream(bytes), { expectedBytes: bytes.length });
    assertEquals(staged.sha256, await sha256Hex(bytes));
    assertEquals(await objectKeys(bucket, "pieces/"), []);
    await staged.commit("bafkmultipart01");
    assertEquals((await store.stat("bafkmultipart01"))?.size, bytes.length);
    const opened = await store.open("bafkmultipart01");
    assertOk(opened);
    const read = new Uint8Array(await new Response(opened.body).arrayBuffer());
    assertEquals(read.length, bytes.length);
    assertOk(read.every((byte, i) => byte === bytes[i]), "the stored bytes differ");
    assertEquals(await objectKeys(bucket, "staging/"), []);
    assertEquals(await uploadKeys(bucket), []);
  },
);

s3Test(
  "s3 store: a piece over the single-copy limit is committed by UploadPartCopy parts",
  async (bucket) => {
    const store = storeOn(bucket, {
      partSizeBytes: 5 * MIB,
      // As if S3's 5 GiB CopyObject limit were 6 MiB: a 12 MiB piece is copied in 3 parts.
      copyLimits: { singleCopyMaxBytes: 6 * MIB, copyPartBytes: 5 * MIB },
    });
    const bytes = seededBytes(12 * MIB + 1, 2);
    const staged = await store.stage(unevenStream(bytes), {
      expectedBytes: bytes.length,
      computeSha256: false,
    });
    await staged.commit("bafkcopyparts01");
    assertEquals(await store.sha256Of("bafkcopyparts01"), await sha256Hex(bytes));
    assertEquals(await objectKeys(bucket), ["pieces/bafkcopyparts01"]);
    assertEquals(await uploadKeys(bucket), []);
  },
);

s3Test(
  "s3 store: a body that fails mid-multipart leaves no upload and no staging object",
  async (bucket) => {
    const store = storeOn(bucket, { partSizeBytes: 5 * MIB, partConcurrency: 2 });
    // Three parts' worth arrive (two sent, one filling), then the connection drops.
    const sent = seededBytes(13 * MIB, 3);
    let offset = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= sent.length) return controller.error(new Error("connection reset"));
        controller.enqueue(sent.slice(offset, offset + MIB));
        offset += MIB;
      },
    });
    const failure = await stageFailure(store.stage(body, { expectedBytes: 20 * MIB }));
    assertEquals(failure.failure, "short_body");
    await assertNothingLeft(bucket);
  },
);

s3Test(
  "s3 store: an abort mid-multipart stops at once and leaves no upload",
  async (bucket) => {
    const store = storeOn(bucket, { partSizeBytes: 5 * MIB });
    const controller = new AbortController();
    let delivered = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(streamController) {
        if (delivered === 11 * MIB) {
          controller.abort(new Error("shutdown"));
          return new Promise<void>(() => {});
        }
        streamController.enqueue(new Uint8Array(MIB).fill(delivered / MIB));
        delivered += MIB;
      },
    });
    const staging = store.stage(body, { expectedBytes: 30 * MIB, signal: controller.signal });
    const failure = await stageFailure(within(staging, 10_000, "an aborted multipart stage"));
    assertEquals(failure.failure, "short_body");
    await assertNothingLeft(bucket);
  },
);

s3Test(
  "s3 store: cleanup aborts a killed upload and deletes staging objects once stale, not before",
  async (bucket) => {
    const staleUploadMs = 24 * 3_600_000;
    const clock = new FakeClock(Date.now());
    const store = storeOn(bucket, { clock, staleUploadMs });
    // What a killed process leaves: an upload with a part, and a staging object never deleted.
    await abandonedUpload(bucket, "staging/killed-upload");
    await putObject(bucket, "staging/left-after-copy", new Uint8Array([1, 2, 3]));
    const between = Date.now();
    // S3 stamps in milliseconds: what comes next is stamped strictly later.
    await eventually(() => Date.now() >= between + 2, "the clock to move past the stale ones");
    await abandonedUpload(bucket, "staging/fresh-upload");
    await putObject(bucket, "staging/fresh-object", new Uint8Array([4]));
    await putObject(bucket, "pieces/bafkkept0001", new Uint8Array([5]));

    assertEquals(await store.cleanup(), { removedTemporaryFiles: 0 }, "nothing is stale yet");
    clock.set(new Date(between + 1 + staleUploadMs).toISOString());
    assertEquals(await store.cleanup(), { removedTemporaryFiles: 2 });
    assertEquals(await uploadKeys(bucket), ["staging/fresh-upload"]);
    assertEquals(await objectKeys(bucket), [
      "pieces/bafkkept0001",
      "staging/fresh-object",
    ]);
  },
);

s3Test(
  "s3 store: a wrong secret fails check and stage as offline, with a clear message",
  async (bucket) => {
    const secretAccessKey = "not-the-secret-0123456789";
    const store = storeOn(bucket, { secretAccessKey, partSizeBytes: 5 * MIB });
    const health = await store.check();
    assertEquals(health.ok, false);
    assertMatch(health.detail, /refused the credentials or access for HEAD bucket \(403\)/);
    assertOk(!health.detail.includes(secretAccessKey), "the detail shows the secret");
    assertOk(!health.detail.includes(bucket.secretAccessKey));
    for (const size of [3, 6 * MIB]) {
      const failure = await stageFailure(
        store.stage(ReadableStream.from([new Uint8Array(size)]), { expectedBytes: size }),
      );
      assertEquals(failure.failure, "offline");
      assertMatch(failure.message, /refused the credentials/);
      assertOk(!failure.message.includes(secretAccessKey));
    }
    await assertNothingLeft(bucket);
  },
);

s3Test(
  "s3 store: a bucket that does not exist is offline, and check says so",
  async (bucket) => {
    const store = storeOn(bucket, { bucket: `missing-${crypto.randomUUID()}` });
    const health = await store.check();
    assertEquals(health.ok, false);
    assertMatch(health.detail, /no such bucket/);
    const failure = await stageFailure(
      store.stage(ReadableStream.from([new Uint8Array(3)]), { expectedBytes: 3 }),
    );
    assertEquals(failure.failure, "offline");
  },
);

s3Test("s3 store: source is r2 by default and configurable", (bucket) => {
  assertEquals(storeOn(bucket).source, "r2");
  assertEquals(storeOn(bucket, { source: "ceph" }).source, "ceph");
});

s3Test(
  "s3 store: list() shows only its own prefix's pieces, without the prefix",
  async (bucket) => {
    const a = storeOn(bucket, { keyPrefix: "a/pieces/", stagingPrefix: "a/staging/" });
    const b = storeOn(bucket, { keyPrefix: "b/pieces/", stagingPrefix: "b/staging/" });
    await (await a.stage(ReadableStream.from([new Uint8Array(1)]), { expectedBytes: 1 }))
      .commit("bafkpiecea001");
    await (await b.stage(ReadableStream.from([new Uint8Array(2)]), { expectedBytes: 2 }))
      .commit("bafkpieceb001");
    const pending = await a.stage(ReadableStream.from([new Uint8Array(3)]), { expectedBytes: 3 });
    await putObject(bucket, "a/other/bafkother0001", new Uint8Array(1));
    // Put there by someone else: not keys a piece can have.
    await putObject(bucket, "a/pieces/nested/bafknested001", new Uint8Array(1));
    await putObject(bucket, "a/pieces/Not-A-Cid", new Uint8Array(1));
    const listed = async (store: S3Store) => (await Array.fromAsync(store.list())).sort();
    assertEquals(await listed(a), ["bafkpiecea001"]);
    assertEquals(await listed(b), ["bafkpieceb001"]);
    assertEquals(await b.stat("bafkpiecea001"), null);
    await pending.discard();
    let refused: unknown = null;
    try {
      storeOn(bucket, { keyPrefix: "x/", stagingPrefix: "x/staging/" });
    } catch (error) {
      refused = error;
    }
    assertMatch(String(refused), /overlap/);
  },
);

Deno.test("s3 store: an S3 that does not answer is offline, for check and for stage", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const store = new S3Store({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    bucket: "nowhere",
    accessKeyId: "key",
    secretAccessKey: "secret",
    requestTimeoutMs: 1000,
  });
  const health = await store.check();
  assertEquals(health.ok, false);
  assertMatch(health.detail, /bucket nowhere at http:\/\/127\.0\.0\.1:\d+: S3 did not answer/);
  const failure = await stageFailure(
    store.stage(ReadableStream.from([new Uint8Array(3)]), { expectedBytes: 3 }),
  );
  assertEquals(failure.failure, "offline");
});

Deno.test("s3 store: S3's error answers map to the driver's failures", () => {
  const failureOf = (status: number, code?: string) =>
    errorOfAnswer(
      "PUT staging/x",
      status,
      code ? `<Error><Code>${code}</Code><Message>m</Message></Error>` : "",
    );
  assertEquals(failureOf(503, "SlowDown").failure, "offline");
  assertEquals(failureOf(503, "SlowDown").retryable, true);
  assertEquals(failureOf(500).failure, "offline");
  assertEquals(failureOf(400, "RequestTimeout").retryable, true);
  assertEquals(failureOf(403, "SignatureDoesNotMatch").failure, "offline");
  assertEquals(failureOf(403, "SignatureDoesNotMatch").retryable, false);
  assertEquals(failureOf(404, "NoSuchBucket").failure, "offline");
  assertEquals(errorOfAnswer("HEAD bucket", 404, "", "NoSuchBucket").failure, "offline");
  assertEquals(failureOf(403, "QuotaExceeded").failure, "full");
  assertEquals(failureOf(400, "EntityTooLarge").failure, "full");
  assertEquals(failureOf(507).failure, "full");
  assertEquals(failureOf(400, "InvalidArgument").failure, "rejected");
  assertEquals(failureOf(409, "OperationAborted").failure, "rejected");
  assertMatch(
    failureOf(400, "InvalidArgument").message,
    /PUT staging\/x \(400 InvalidArgument: m\)/,
  );
});
