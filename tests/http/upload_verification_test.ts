/** Uploads under verifiable cids: the bytes must hash to the cid, or nothing is kept. */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { bearer, errorOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { MIB, sha256 } from "../helpers/bytes.ts";
import { storedPieces, tempFiles } from "../helpers/pieces.ts";
import { PieceHasher } from "../../src/kernel/piece_cid/hasher.ts";
import { pieceCidV1, pieceCidV2, sha256Cid } from "../../src/kernel/piece_cid/cid_codec.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

function cidsOf(bytes: Uint8Array) {
  const hasher = new PieceHasher();
  hasher.update(bytes);
  const d = hasher.digest();
  return { v2: pieceCidV2(d.root, d.height, d.padding), v1: pieceCidV1(d.root) };
}

async function sha256CidOf(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return sha256Cid(await sha256(bytes));
}

function flipped(bytes: Uint8Array<ArrayBuffer>, at: number): Uint8Array<ArrayBuffer> {
  const copy = bytes.slice();
  copy[at] ^= 0x01;
  return copy;
}

// 3 MiB spans several hashing segments, so the Worker path is exercised.
const PAYLOAD = patternBytes(3 * MIB + 12345, 5);

for (const form of ["PieceCIDv2", "PieceCIDv1", "sha2-256 CIDv1"] as const) {
  const cidFor = async (bytes: Uint8Array<ArrayBuffer>) =>
    form === "PieceCIDv2"
      ? cidsOf(bytes).v2
      : form === "PieceCIDv1"
      ? cidsOf(bytes).v1
      : await sha256CidOf(bytes);

  Deno.test(`verify: the right ${form} is accepted and served`, async () => {
    await using server = await startTestServer();
    const cid = await cidFor(PAYLOAD);
    const response = await server.upload(cid, PAYLOAD);
    assertEquals(response.status, 200, await response.clone().text());
    assertEquals((await response.json()).cid, cid);
    const served = new Uint8Array(await (await server.get(`/p/${cid}`)).arrayBuffer());
    assertEquals(served.length, PAYLOAD.length);
    assertEquals(await sha256CidOf(served), await sha256CidOf(PAYLOAD));
    assertEquals(server.logs.find((l) => l.route === "/api/upload")?.verified, true);
  });

  Deno.test(`verify: the ${form} of other bytes, or one flipped byte, is 400 cid_mismatch`, async () => {
    const cap = PAYLOAD.length + 10;
    await using server = await startTestServer({ args: ["--sponsored-daily-cap", `${cap}`] });
    const cid = await cidFor(PAYLOAD);
    for (
      const body of [
        flipped(PAYLOAD, 0),
        flipped(PAYLOAD, PAYLOAD.length - 1),
        flipped(PAYLOAD, 2 * MIB + 7),
      ]
    ) {
      const response = await server.upload(cid, body);
      await assertErrorAnswer(response, 400, "cid_mismatch");
    }
    const other = patternBytes(PAYLOAD.length, 99);
    const response = await server.upload(cid, other);
    assertEquals((await errorOf(response)).error, "cid_mismatch");
    // Nothing stored, nothing left in tmp/, nothing charged: the real bytes still fit the cap.
    assertEquals(await storedPieces(server.dataDir), []);
    assertEquals(await tempFiles(server.dataDir), []);
    assertEquals((await server.get(`/p/${cid}`)).status, 404);
    const good = await server.upload(cid, PAYLOAD);
    assertEquals(good.status, 200);
    await good.body?.cancel();
  });
}

Deno.test("verify: a PieceCIDv2 with another payload size is refused before the body is read", async () => {
  await using server = await startTestServer();
  const cid = cidsOf(patternBytes(1000)).v2;
  const response = await rawRequest(
    Number(new URL(server.url).port),
    `POST /api/upload?cid=${cid} HTTP/1.1\nHost: x\nContent-Type: a/b\nContent-Length: 5000\nConnection: close\n`,
  );
  assertEquals(response?.status, 400);
  assertEquals(JSON.parse(response!.body).error, "cid_mismatch");
  assertMatch(JSON.parse(response!.body).message, /1000 bytes/);
});

Deno.test("verify: small payloads and uppercase cids verify too; opaque cids still work", async () => {
  await using server = await startTestServer();
  const tiny = patternBytes(1);
  const v2 = cidsOf(tiny).v2;
  const ok = await server.upload(v2.toUpperCase(), tiny);
  assertEquals(ok.status, 200);
  assertEquals((await ok.json()).cid, v2.toUpperCase());
  const opaque = await server.upload("myopaquename01", patternBytes(10));
  assertEquals(opaque.status, 200);
  await opaque.body?.cancel();
  assertEquals(
    server.logs.find((l) => l.status === 200 && l.verified === false) !== undefined,
    true,
  );
});

Deno.test("verify: --require-verifiable-cids refuses opaque cids", async () => {
  await using server = await startTestServer({ args: ["--require-verifiable-cids", "true"] });
  const opaque = await server.upload("myopaquename01", patternBytes(10));
  await assertErrorAnswer(opaque, 400, "invalid_cid");
  const bytes = patternBytes(10);
  const verified = await server.upload(cidsOf(bytes).v2, bytes);
  assertEquals(verified.status, 200);
  await verified.body?.cancel();
  const info = await (await server.get("/api/piece-cids")).json();
  assertEquals(info.opaqueAccepted, false);
});

Deno.test("verify: hashing on the main thread (--hash-workers 0) gives the same verdicts", async () => {
  await using server = await startTestServer({ args: ["--hash-workers", "0"] });
  const good = await server.upload(cidsOf(PAYLOAD).v2, PAYLOAD);
  assertEquals(good.status, 200);
  await good.body?.cancel();
  const bad = await server.upload(cidsOf(PAYLOAD).v1, flipped(PAYLOAD, 99));
  assertEquals((await errorOf(bad)).error, "cid_mismatch");
});

Deno.test("piece-cids: POST computes {cid, size} without storing or charging anything", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { quotaMb: 1 });
  const body = patternBytes(2 * MIB + 3, 8);
  const response = await fetch(`${server.url}/api/piece-cids`, {
    method: "POST",
    headers: bearer(token),
    body,
  });
  assertEquals(response.status, 200);
  assertEquals(await response.json(), { cid: cidsOf(body).v2, size: body.length });
  assertEquals(await storedPieces(server.dataDir), []);
  const usage = await (await server.get("/api/usage", { headers: bearer(token) })).json();
  assertEquals(usage.remainingTodayBytes, MIB);
});

Deno.test("piece-cids: POST needs a put-scoped token, a length, and respects the file cap", async () => {
  await using server = await startTestServer({ args: ["--token-max-file-size", "1KiB"] });
  const anonymous = await fetch(`${server.url}/api/piece-cids`, { method: "POST", body: "x" });
  assertEquals(anonymous.status, 401);
  await anonymous.body?.cancel();
  const listOnly = (await signup(server, { scopes: ["list"] })).token;
  const noPut = await fetch(`${server.url}/api/piece-cids`, {
    method: "POST",
    headers: bearer(listOnly),
    body: "x",
  });
  assertEquals((await errorOf(noPut)).error, "insufficient_scope");
  const { token } = await signup(server);
  const big = await fetch(`${server.url}/api/piece-cids`, {
    method: "POST",
    headers: bearer(token),
    body: new Uint8Array(1025),
  });
  assertEquals(big.status, 413);
  await big.body?.cancel();
  const empty = await fetch(`${server.url}/api/piece-cids`, {
    method: "POST",
    headers: bearer(token),
    body: new Uint8Array(0),
  });
  assertEquals((await errorOf(empty)).error, "empty_bodyy");
});
