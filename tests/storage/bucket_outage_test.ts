/**
 * The bucket going away under the server, on a real radosgw of the file's
 * own (tests/helpers/s3_faults.ts): silent (the gateway SIGSTOPped) and
 * refusing (the gateway stopped), and unreachable when the server starts.
 * In each, requests answer 503 storage_offline with Retry-After well before
 * their deadline (--s3-timeout, set to 20 s here: without the liveness check
 * a silent bucket held every request for that long, three times over), and
 * a retrieval cut off mid-body ends instead of hanging; /healthz says the
 * store is down; the server comes back by itself once the bucket answers;
 * every upload acknowledged is served byte-identical; and no staging upload
 * or object is left once the leftover sweep has run.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { MIB } from "../helpers/bytes.ts";
import { eventually, within } from "../helpers/wait.ts";
import { errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { objectKeys, s3ServerFlags, s3ServerKeys, uploadKeys } from "../helpers/s3.ts";
import { faultyBucket, faultyS3Available } from "../helpers/s3_faults.ts";
import type { FaultyBucket } from "../helpers/s3_faults.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";

const ignore = !faultyS3Available();
/** The hard deadline of one S3 request in these tests; answers must come long before. */
const S3_TIMEOUT_S = 20;

function serverOf(s3: FaultyBucket): Promise<TestServer> {
  return startTestServer({
    args: [...s3ServerFlags(s3), "--s3-timeout", String(S3_TIMEOUT_S)],
    env: s3ServerKeys(s3),
    jobIntervals: { "leftover-sweep": 200 },
  });
}

/** A test on a bucket of the file's own cluster and a server on it (serverOf). */
function outageTest(name: string, fn: (s3: FaultyBucket, server: TestServer) => Promise<void>) {
  Deno.test({
    name,
    ignore,
    fn: async () => {
      await using s3 = await faultyBucket();
      await using server = await serverOf(s3);
      await fn(s3, server);
    },
  });
}

/** Answered 503 storage_offline with a Retry-After. */
async function assertOffline(response: Response, what: string): Promise<void> {
  assertEquals(response.status, 503, what);
  assertOk(response.headers.get("retry-after") !== null, `${what}: Retry-After`);
  assertEquals((await errorOf(response)).error, "storage_offline", what);
}

async function assertStored(server: TestServer, cid: string, bytes: Uint8Array): Promise<void> {
  const response = await server.get(`/p/${cid}`);
  assertEquals(response.status, 200, cid);
  assertEquals(new Uint8Array(await response.arrayBuffer()), bytes, cid);
}

async function upload(server: TestServer, cid: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await server.upload(cid, bytes);
  await response.body?.cancel();
  return response.status;
}

/**
 * Once the bucket is back: /healthz turns 200 by itself, a new upload is
 * stored, every acknowledged piece is served byte-identical, and the sweep
 * leaves nothing under staging/.
 */
async function assertRecovered(
  server: TestServer,
  s3: FaultyBucket,
  pieces: { acknowledged: [string, Uint8Array][]; fresh: [string, Uint8Array<ArrayBuffer>] },
): Promise<void> {
  await eventually(
    async () => {
      const health = await server.get("/healthz");
      await health.body?.cancel();
      return health.status === 200;
    },
    "/healthz 200 again",
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  assertEquals(await upload(server, ...pieces.fresh), 200);
  for (const [cid, bytes] of [...pieces.acknowledged, pieces.fresh]) {
    await assertStored(server, cid, bytes);
  }
  await noStagingLeftovers(s3);
}

/** No multipart upload and no object left under staging/. */
async function noStagingLeftovers(s3: FaultyBucket): Promise<void> {
  let left: string[] = [];
  await eventually(
    async () => {
      left = [...await uploadKeys(s3, "staging/"), ...await objectKeys(s3, "staging/")];
      return left.length === 0;
    },
    "no staging leftovers",
    { timeoutMs: 20_000, intervalMs: 200 },
  ).catch((error) => {
    throw new Error(`${error.message}: ${left.join(", ")}`);
  });
}

outageTest(
  "bucket outage: a silent (SIGSTOPped) gateway is 503 + Retry-After, not a hang",
  async (s3, server) => {
    const kept = patternBytes(200 * 1024, 1); // above the small-piece cache: read from S3
    const big = patternBytes(24 * MIB, 2);
    assertEquals(await upload(server, "bafksilentkept01", kept), 200);
    assertEquals(await upload(server, "bafksilentbig001", big), 200);

    // A retrieval under way when the bucket goes silent.
    const streaming = await server.get("/p/bafksilentbig001");
    const reader = streaming.body!.getReader();
    await reader.read();
    s3.gateway.pause();
    try {
      const started = performance.now();
      const answers = await Promise.all([
        server.upload("bafksilentsmall1", patternBytes(100 * 1024, 3)), // one PutObject
        server.upload("bafksilentlarge1", patternBytes(12 * MIB, 4)), // a multipart upload
        server.get("/p/bafksilentkept01"),
      ]);
      const seconds = (performance.now() - started) / 1000;
      for (const [i, response] of answers.entries()) await assertOffline(response, `request ${i}`);
      assertOk(seconds < S3_TIMEOUT_S, `answered after ${seconds.toFixed(1)} s`);
      // The cut-off retrieval ends (an error, or short of its length) instead of hanging.
      let received = 0;
      await within(
        (async () => {
          for (let r = await reader.read(); !r.done; r = await reader.read()) {
            received += r.value.byteLength;
          }
        })().catch(() => {}),
        S3_TIMEOUT_S * 1000,
        "the retrieval cut off by the silence ends",
      );
      assertOk(received < big.byteLength, `got ${received} of ${big.byteLength} bytes`);
      // Known offline now: refused at once, and /healthz says why.
      await assertOffline(await server.upload("bafksilentlate01", "x"), "upload while offline");
      const health = await server.get("/healthz");
      assertEquals(health.status, 503);
      assertEquals((await health.json()).storage.ok, false);
    } finally {
      s3.gateway.resume();
    }
    await assertRecovered(server, s3, {
      acknowledged: [["bafksilentkept01", kept], ["bafksilentbig001", big]],
      fresh: ["bafksilentafter1", patternBytes(12 * MIB, 5)],
    });
  },
);

outageTest(
  "bucket outage: a refusing gateway is 503 + Retry-After at once; back when it starts",
  async (s3, server) => {
    const kept = patternBytes(300 * 1024, 6);
    assertEquals(await upload(server, "bafkrefusekept01", kept), 200);
    await s3.gateway.stop();
    try {
      const answers = await Promise.all([
        server.upload("bafkrefusesmall1", patternBytes(100 * 1024, 7)),
        server.upload("bafkrefuselarge1", patternBytes(12 * MIB, 8)),
        server.get("/p/bafkrefusekept01"),
        server.get("/p/bafkrefusekept01", { method: "HEAD" }),
      ]);
      for (const [i, response] of answers.entries()) {
        if (i === 3) {
          assertEquals(response.status, 503);
          assertOk(response.headers.get("retry-after") !== null, "HEAD: Retry-After");
        } else await assertOffline(response, `request ${i}`);
      }
      const health = await server.get("/healthz");
      assertEquals(health.status, 503);
      assertEquals((await health.json()).storage.ok, false);
    } finally {
      await s3.gateway.start();
    }
    await assertRecovered(server, s3, {
      acknowledged: [["bafkrefusekept01", kept]],
      fresh: ["bafkrefuseafter1", patternBytes(9 * MIB, 9)],
    });
  },
);

Deno.test({
  name: "bucket outage: main.ts starts while the bucket is unreachable, unready, then recovers",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = await faultyBucket();
    const dataDir = await Deno.makeTempDir({ prefix: "bucket-outage-" });
    await s3.gateway.stop();
    try {
      // The real program with the start task's permissions: it must start, not exit.
      await using server = await spawnServer(dataDir, s3ServerFlags(s3), {
        env: s3ServerKeys(s3),
      });
      const health = await fetch(`${server.url}/healthz`);
      assertEquals(health.status, 503);
      assertEquals((await health.json()).storage.ok, false);
      const refused = await fetch(`${server.url}/api/upload?cid=bafkstartdown001`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: patternBytes(1000, 10),
      });
      await assertOffline(refused, "upload while the bucket is down");
      await s3.gateway.start();
      await eventually(
        async () => {
          const answer = await fetch(`${server.url}/healthz`);
          await answer.body?.cancel();
          return answer.status === 200;
        },
        "/healthz 200 once the bucket answers",
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      const stored = await fetch(`${server.url}/api/upload?cid=bafkstartdown001`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: patternBytes(1000, 10),
      });
      await stored.body?.cancel();
      assertEquals(stored.status, 200);
      // Never an uncaught error (the process would have exited: spawnServer's `exited`).
      assertEquals(server.stderr().includes("Uncaught"), false, server.stderr());
      assertEquals(
        await Promise.race([server.exited, Promise.resolve("running")]),
        "running",
      );
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
