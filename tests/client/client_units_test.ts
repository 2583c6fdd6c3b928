/**
 * The SDK's pure parts, without a server: the incremental SHA-256 against
 * Web Crypto, which failures are retried and for how long, the manifest's
 * exact serialisation and what parsing refuses, how a file is cut into
 * pieces and the pieces named.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, seededBytes } from "../helpers/bytes.ts";
import { seededRandom } from "../../scripts/lib/random.ts";
import { createSha256, toHex } from "../../src/client/sdk/sha256.ts";
import {
  parseRetryAfter,
  retryDelayMs,
  retryPolicyOf,
  withRetry,
} from "../../src/client/sdk/retry.ts";
import { NetworkError, StorageError, VerificationError } from "../../src/client/sdk/errors.ts";
import {
  manifestFilename,
  manifestSizeBound,
  parseManifest,
  pieceFilename,
  serializeManifest,
} from "../../src/client/sdk/manifest.ts";
import { planPieces } from "../../src/client/sdk/upload.ts";
import { filenameOf } from "../../src/client/sdk/download.ts";
import type { Manifest } from "../../src/client/sdk/types.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/mod.ts";

Deno.test("sha256: equals Web Crypto for every length around the block and padding edges, in any chunking", async () => {
  const random = seededRandom(7);
  const sizes = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 64 * KIB + 3, MIB + 17];
  for (const size of sizes) {
    const bytes = seededBytes(size, size);
    const expected = toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
    const whole = createSha256();
    whole.update(bytes);
    assertEquals(toHex(whole.digest()), expected, `size ${size} in one call`);
    const chunked = createSha256();
    for (let offset = 0; offset < size;) {
      const take = 1 + Math.floor(random() * 200);
      chunked.update(bytes.subarray(offset, offset + take));
      offset += take;
    }
    assertEquals(toHex(chunked.digest()), expected, `size ${size} in random chunks`);
  }
  const done = createSha256();
  done.digest();
  let threw = false;
  try {
    done.update(new Uint8Array(1));
  } catch {
    threw = true;
  }
  assertOk(threw, "no update after digest");
});

Deno.test("retry: what is repeated, and how long the wait is", () => {
  const policy = { ...retryPolicyOf({ attempts: 5, baseDelayMs: 100, maxDelayMs: 30_000 }) };
  policy.random = () => 1; // the longest jittered wait: the full backoff
  const status = (code: number, name: string, retryAfterSeconds?: number) =>
    new StorageError(code, name, name, { retryAfterSeconds });
  const network = new NetworkError("reset");

  assertEquals(retryDelayMs(network, 1, policy, "safe"), 100);
  assertEquals(retryDelayMs(network, 3, policy, "safe"), 400, "doubles");
  assertEquals(retryDelayMs(network, 1, policy, "only-if-not-done"), null, "may have been done");
  assertEquals(retryDelayMs(network, 5, policy, "safe"), null, "attempts used up");
  assertEquals(retryDelayMs(status(500, "internal_error"), 1, policy, "safe"), 100);
  assertEquals(retryDelayMs(status(502, "stage_failed"), 1, policy, "only-if-not-done"), null);
  assertEquals(retryDelayMs(status(503, "server_busy", 1), 1, policy, "safe"), 1000, "Retry-After");
  assertEquals(
    retryDelayMs(status(503, "storage_offline", 1), 1, policy, "only-if-not-done"),
    1000,
  );
  assertEquals(retryDelayMs(status(503, "storage_offline", 3600), 1, policy, "safe"), null, "long");
  assertEquals(retryDelayMs(status(408, "request_timeout"), 2, policy, "safe"), 200);
  assertEquals(retryDelayMs(status(429, "rate_limited", 1), 1, policy, "safe"), 1000);
  assertEquals(
    retryDelayMs(status(429, "rate_limited"), 1, policy, "safe"),
    null,
    "no Retry-After",
  );
  assertEquals(retryDelayMs(status(429, "quota_exceeded", 43_200), 1, policy, "safe"), null);
  for (const [code, name] of [[400, "cid_mismatch"], [401, "invalid_token"], [404, "not_found"]]) {
    assertEquals(retryDelayMs(status(code as number, name as string), 1, policy, "safe"), null);
  }
  assertEquals(
    retryDelayMs(new TypeError("a bug"), 1, policy, "safe"),
    null,
    "only known failures",
  );
  assertEquals(retryDelayMs(new VerificationError("c", "cid", "m"), 1, policy, "safe"), null);

  // Jitter keeps the wait between half and all of the backoff.
  policy.random = () => 0;
  assertEquals(retryDelayMs(network, 3, policy, "safe"), 200);
  assertEquals(retryDelayMs(network, 20, { ...policy, attempts: 50 }, "safe"), 15_000, "capped");
});

Deno.test("retry: withRetry repeats until success, gives up with NetworkError, and stops on abort", async () => {
  const policy = retryPolicyOf({ attempts: 3, baseDelayMs: 1 });
  let calls = 0;
  const value = await withRetry(() => {
    calls++;
    if (calls < 3) throw new NetworkError("reset");
    return Promise.resolve("ok");
  }, { policy, repeatable: "safe" });
  assertEquals([value, calls], ["ok", 3]);

  calls = 0;
  const error = await withRetry(() => {
    calls++;
    throw new NetworkError("reset");
  }, { policy, repeatable: "safe" }).then(() => null, (e) => e);
  assertOk(error instanceof NetworkError);
  assertEquals([calls, error.attempts], [3, 3]);

  const controller = new AbortController();
  const waiting = withRetry(() => {
    throw new StorageError(503, "server_busy", "busy", { retryAfterSeconds: 20 });
  }, { policy: retryPolicyOf({ attempts: 3 }), repeatable: "safe", signal: controller.signal });
  controller.abort(new Error("stop waiting"));
  assertEquals((await waiting.then(() => null, (e) => e))?.message, "stop waiting");
});

Deno.test("retry: Retry-After as seconds or as an HTTP date", () => {
  const now = Date.parse("2026-11-21T12:00:00Z");
  assertEquals(parseRetryAfter("1", now), 1);
  assertEquals(parseRetryAfter(" 43200 ", now), 43200);
  assertEquals(parseRetryAfter("Sat, 21 Nov 2026 12:00:30 GMT", now), 30);
  assertEquals(parseRetryAfter("Fri, 20 Nov 2026 12:00:00 GMT", now), 0, "in the past");
  assertEquals(parseRetryAfter("soon", now), undefined);
  assertEquals(parseRetryAfter(null, now), undefined);
});

const MANIFEST: Manifest = {
  format: "storage-manifest",
  version: 1,
  name: 'clip "1".mp4',
  contentType: "video/mp4",
  size: 300,
  sha256: "ab".repeat(32),
  pieces: [
    { cid: pieceCidV2(new Uint8Array(32).fill(1), 3, 54), size: 200 },
    // 127 × 2^(2-2) − 27 = 100 bytes.
    { cid: pieceCidV2(new Uint8Array(32).fill(2), 2, 27), size: 100 },
  ],
};

Deno.test("manifest: serialised in one fixed key order, whatever order the object has", () => {
  const shuffled = {
    pieces: MANIFEST.pieces.map((p) => ({ size: p.size, cid: p.cid })),
    sha256: MANIFEST.sha256,
    size: 300,
    contentType: "video/mp4",
    name: MANIFEST.name,
    version: 1,
    format: "storage-manifest",
  } as Manifest;
  const text = new TextDecoder().decode(serializeManifest(shuffled));
  assertEquals(
    text,
    `{"format":"storage-manifest","version":1,"name":"clip \\"1\\".mp4","contentType":"video/mp4",` +
      `"size":300,"sha256":"${"ab".repeat(32)}","pieces":[{"cid":"${
        MANIFEST.pieces[0].cid
      }","size":200},{"cid":"${MANIFEST.pieces[1].cid}","size":100}]}`,
  );
  assertEquals(parseManifest(serializeManifest(MANIFEST), "x"), MANIFEST);
  assertOk(manifestSizeBound(2, MANIFEST.name, MANIFEST.contentType) >= text.length);
});

Deno.test("manifest: parsing refuses what it cannot rely on, and ignores unknown fields", () => {
  const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  const refused = (value: unknown, why: RegExp) => {
    let error: unknown = null;
    try {
      parseManifest(
        typeof value === "string" ? new TextEncoder().encode(value) : encode(value),
        "m",
      );
    } catch (e) {
      error = e;
    }
    assertOk(error instanceof VerificationError, `accepted ${JSON.stringify(value)}`);
    assertEquals(error.failure, "manifest");
    assertOk(why.test(error.message), error.message);
  };
  refused("{not json", /not UTF-8 JSON/);
  refused([1, 2], /not an object/);
  refused({ ...MANIFEST, format: "other" }, /format/);
  refused({ ...MANIFEST, version: 2 }, /version 2/);
  refused({ ...MANIFEST, name: 5 }, /name/);
  refused({ ...MANIFEST, size: 301 }, /add up to 300 bytes, not 301/);
  refused({ ...MANIFEST, size: -1 }, /size/);
  refused({ ...MANIFEST, sha256: "AB".repeat(32) }, /sha256/);
  refused({ ...MANIFEST, pieces: [] }, /pieces/);
  refused({ ...MANIFEST, pieces: [{ cid: "UPPER0001", size: 300 }] }, /piece 0 has no valid cid/);
  refused({ ...MANIFEST, pieces: [{ cid: "opaquepiece0001", size: 0 }] }, /no valid size/);
  // Every piece is checked as it streams, so each must be named by a cid that fixes its bytes.
  refused(
    { ...MANIFEST, size: 300, pieces: [{ cid: "opaquepiece0001", size: 300 }] },
    /PieceCIDv2/,
  );
  // A PieceCIDv2 fixes its size: an entry that disagrees is refused.
  refused({
    ...MANIFEST,
    size: 201,
    pieces: [{ ...MANIFEST.pieces[0], size: 101 }, { cid: "opaquepiece0001", size: 100 }],
  }, /its cid fixes 200/);
  assertEquals(parseManifest(encode({ ...MANIFEST, note: "later versions may add this" }), "m"), {
    ...MANIFEST,
  });
});

Deno.test("manifest: piece and manifest names sort in order and fit X-Filename's 255 bytes", () => {
  assertEquals(pieceFilename("video.mp4", 0, 12), "video.mp4.part01");
  assertEquals(pieceFilename("video.mp4", 11, 12), "video.mp4.part12");
  assertEquals(pieceFilename("a", 2, 3), "a.part3");
  assertEquals(pieceFilename(null, 0, 2), null);
  assertEquals(manifestFilename("video.mp4"), "video.mp4.manifest.json");
  const long = "é".repeat(200); // 400 bytes of UTF-8
  const name = pieceFilename(long, 0, 2)!;
  assertOk(new TextEncoder().encode(name).byteLength <= 255);
  assertOk(name.endsWith(".part1") && name.startsWith("é"));
  assertOk(new TextEncoder().encode(manifestFilename(long)!).byteLength <= 255);
});

Deno.test("plan: one piece up to pieceSize (clamped to the cap), else pieces of that size", () => {
  assertEquals(planPieces(100, 100, 100), [{ index: 0, start: 0, end: 100 }]);
  assertEquals(planPieces(100, 1000, 150), [{ index: 0, start: 0, end: 100 }]);
  // Larger than pieceSize: split even though the cap would take it whole (bounded memory).
  assertEquals(planPieces(100, 1000, 40).map((p) => p.end - p.start), [40, 40, 20]);
  assertEquals(planPieces(0, 100, 10), [{ index: 0, start: 0, end: 0 }]);
  assertEquals(planPieces(250, 100, 1000).map((p) => [p.start, p.end]), [[0, 100], [100, 200], [
    200,
    250,
  ]]);
  assertEquals(planPieces(250, 100, 60).map((p) => p.end - p.start), [60, 60, 60, 60, 10]);
  let threw = false;
  try {
    planPieces(250, 100, 0);
  } catch (error) {
    threw = error instanceof RangeError;
  }
  assertOk(threw);
});

Deno.test("download: the stored name is read back from Content-Disposition", () => {
  assertEquals(
    filenameOf(`inline; filename="r_sum_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`),
    "résumé.pdf",
  );
  assertEquals(filenameOf(`inline; filename="a \\"b\\".txt"`), 'a "b".txt');
  assertEquals(filenameOf("inline"), null);
  assertEquals(filenameOf(null), null);
});
