/**
 * The tus endpoint's protocol, request by request (the stock clients are in
 * tests/client/tus_js_client_test.ts and tests/web/uppy_test.ts): discovery,
 * creation and its refusals, appends at the right offset only, the last byte's
 * check and commit, termination, the result, and who may touch an upload.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { KIB, MIB, seededBytes, sha256 } from "../helpers/bytes.ts";
import { partialFiles, storedPieces } from "../helpers/pieces.ts";
import { bearer, errorOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import {
  pieceCidOf,
  TUS,
  tusCreate,
  tusCreated,
  tusHead,
  tusPatch,
  uploadMetadata,
} from "../helpers/tus_requests.ts";
import { sha256Cid } from "../../src/kernel/piece_cid/cid_codec.ts";
import { MANIFEST_CONTENT_TYPE } from "../../src/kernel/manifest_format.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";
import { manifestOf } from "../helpers/manifests.ts";

const FILE = seededBytes(3 * MIB + 777, 26);
const CID = pieceCidOf(FILE);

async function reserved(server: TestServer): Promise<number> {
  return await server.server.services.ledger.reservedTotal();
}

Deno.test("tus: OPTIONS discovers the protocol, its extensions and what a browser may send", async () => {
  await using server = await startTestServer({ args: ["--wallet-max-file-size", "8GiB"] });
  const response = await fetch(`${server.url}/api/tus`, { method: "OPTIONS" });
  assertEquals(response.status, 204);
  const h = response.headers;
  assertEquals(h.get("tus-version"), "1.0.0");
  assertEquals(h.get("tus-resumable"), "1.0.0");
  assertEquals(h.get("tus-extension"), "creation,creation-with-upload,termination,expiration");
  assertEquals(h.get("tus-max-size"), String(8 * 1024 * MIB), "the largest per-file cap");
  assertMatch(h.get("access-control-allow-methods")!, /PATCH, DELETE/);
  for (const name of ["Tus-Resumable", "Upload-Length", "Upload-Offset", "Upload-Metadata"]) {
    assertMatch(h.get("access-control-allow-headers")!, new RegExp(name));
  }
  for (const name of ["Location", "Upload-Offset", "Upload-Length", "X-Storage-Deal-Id"]) {
    assertMatch(h.get("access-control-expose-headers")!, new RegExp(name));
  }
  // Other paths get the CORS allowances but no tus discovery.
  const other = await fetch(`${server.url}/api/upload`, { method: "OPTIONS" });
  assertEquals(other.headers.get("tus-version"), null);
});

Deno.test("tus: an upload in three PATCHes is verified by its last byte and answers its deal", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const url = await tusCreated(server.url, {
    cid: CID,
    length: FILE.length,
    filename: "résumé.bin",
    headers: bearer(token),
  });
  assertMatch(url, new RegExp(`^${server.url}/api/tus/[0-9a-f]{32}$`));
  const cuts = [0, MIB, 2 * MIB + 5, FILE.length];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const answer = await tusPatch(url, cuts[i], FILE.slice(cuts[i], cuts[i + 1]), bearer(token));
    assertEquals(answer.status, 204, await answer.text());
    assertEquals(answer.headers.get("upload-offset"), String(cuts[i + 1]));
    assertEquals(answer.headers.get("tus-resumable"), "1.0.0");
    const last = i + 2 === cuts.length;
    assertEquals(answer.headers.get("upload-expires") === null, last, "expiry until the end");
    assertEquals(answer.headers.get("x-storage-cid"), last ? CID : null);
    if (last) assertMatch(answer.headers.get("x-storage-deal-id")!, /^stage-/);
  }
  const stored = await server.get(`/p/${CID}`);
  assertEquals(new Uint8Array(await stored.arrayBuffer()), FILE);
  assertMatch(stored.headers.get("content-disposition")!, /r%C3%A9sum%C3%A9\.bin/);
  const result = await fetch(url, { headers: bearer(token) });
  assertEquals(result.status, 200);
  const body = await result.json();
  assertEquals([body.cid, body.size, body.owner, body.sponsored], [
    CID,
    FILE.length,
    "dev@example.org",
    false,
  ]);
  const files = await (await server.get("/api/files", { headers: bearer(token) })).json();
  assertEquals(files.files.map((f: { dealId: string }) => f.dealId), [body.dealId]);
  assertEquals(await reserved(server), 0, "the commit settled the reservation");
  assertEquals(await partialFiles(server.dataDir), []);
});

Deno.test("tus: creation with the whole file finishes on the POST", async () => {
  await using server = await startTestServer();
  const small = seededBytes(10 * KIB, 3);
  const cid = sha256Cid(await sha256(small));
  const created = await tusCreate(server.url, { cid, length: small.length, body: small });
  assertEquals(created.status, 201, await created.text());
  assertEquals(created.headers.get("upload-offset"), String(small.length));
  assertEquals(created.headers.get("x-storage-cid"), cid);
  assertMatch(created.headers.get("x-storage-deal-id")!, /^stage-/);
  assertOk(created.headers.get("ratelimit"));
  assertEquals((await server.get(`/p/${cid}`)).status, 200);
});

Deno.test("tus: a wrong cid fails at the last PATCH with 400 cid_mismatch and keeps nothing", async () => {
  await using server = await startTestServer();
  const other = seededBytes(FILE.length, 99);
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  assertEquals((await tusPatch(url, 0, other.slice(0, 2 * MIB))).status, 204);
  assertEquals(await reserved(server), FILE.length);
  const last = await tusPatch(url, 2 * MIB, other.slice(2 * MIB));
  await assertErrorAnswer(last, 400, "cid_mismatch");
  assertEquals(last.headers.get("tus-resumable"), "1.0.0");
  assertEquals((await tusHead(url)).status, 404, "the upload is gone");
  assertEquals(await storedPieces(server.dataDir), []);
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals(await reserved(server), 0);
  assertEquals((await server.get(`/p/${CID}`)).status, 404);
});

Deno.test("tus: a PATCH at another offset is 409 with the upload's offset, and changes nothing", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  assertEquals((await tusPatch(url, 0, FILE.slice(0, 1000))).status, 204);
  for (const offset of [0, 999, 1001]) {
    const answer = await tusPatch(url, offset, FILE.slice(offset, offset + 10));
    await assertErrorAnswer(answer, 409, "offset_mismatch");
    assertEquals(answer.headers.get("upload-offset"), "1000");
  }
  assertEquals((await tusHead(url)).offset, 1000);
});

Deno.test("tus: refusals of PATCH (type, offset, length, version) and of HEAD", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  const cases: [RequestInit, number, string][] = [
    [
      { headers: { ...TUS, "content-type": "application/octet-stream", "upload-offset": "0" } },
      415,
      "unsupported_media_type",
    ],
    [
      { headers: { ...TUS, "content-type": "application/offset+octet-stream" } },
      400,
      "invalid_request",
    ],
    [
      {
        headers: {
          ...TUS,
          "content-type": "application/offset+octet-stream",
          "upload-offset": "-1",
        },
      },
      400,
      "invalid_request",
    ],
    [
      { headers: { "content-type": "application/offset+octet-stream", "upload-offset": "0" } },
      412,
      "unsupported_version",
    ],
  ];
  for (const [init, status, code] of cases) {
    const answer = await fetch(url, { ...init, method: "PATCH", body: new Uint8Array(10) });
    assertEquals([answer.status, (await errorOf(answer)).error], [status, code]);
    assertEquals(answer.headers.get("tus-resumable"), "1.0.0");
  }
  const tooLong = await tusPatch(url, 0, new Uint8Array(FILE.length + 1));
  assertEquals([tooLong.status, (await errorOf(tooLong)).error], [413, "too_large"]);
  const old = await fetch(url, { method: "HEAD", headers: { "tus-resumable": "0.2.2" } });
  assertEquals([old.status, old.headers.get("tus-version")], [412, "1.0.0"]);
  assertEquals((await tusHead(url)).offset, 0, "nothing was appended");
});

Deno.test("tus: creation refusals name what is wrong, before a byte is kept", async () => {
  await using server = await startTestServer({ args: ["--sponsored-max-file-size", "1MiB"] });
  const post = (headers: Record<string, string>) =>
    fetch(`${server.url}/api/tus`, { method: "POST", headers: { ...TUS, ...headers } });
  const meta = (fields: Record<string, string>) => ({ "upload-metadata": uploadMetadata(fields) });
  const ok = { cid: "bafkopaque01", filetype: "text/plain" };
  const cases: [Record<string, string>, number, string][] = [
    [meta(ok), 400, "invalid_request"], // no Upload-Length
    [{ "upload-defer-length": "1", ...meta(ok) }, 400, "invalid_request"],
    [{ "upload-length": "0", ...meta(ok) }, 400, "empty_bodyy"],
    [{ "upload-length": "5", "upload-metadata": "cid" }, 400, "invalid_content_type"],
    [{ "upload-length": "5", "upload-metadata": "cid !!!,filetype eA==" }, 400, "invalid_request"],
    [{ "upload-length": "5", ...meta({ filetype: "text/plain" }) }, 400, "invalid_cid"],
    [{ "upload-length": "5", ...meta({ cid: "bafkopaque01" }) }, 400, "invalid_content_type"],
    [
      { "upload-length": "5", ...meta({ ...ok, filetype: "multipart/form-data" }) },
      400,
      "invalid_content_type",
    ],
    [{ "upload-length": "5", ...meta({ ...ok, filename: "a\nb" }) }, 400, "invalid_filename"],
    [{ "upload-length": "5", ...meta({ ...ok, filename: "a\u2028b" }) }, 400, "invalid_filename"],
    [{ "upload-length": "5", ...meta({ ...ok, filename: "a\u200bb" }) }, 400, "invalid_filename"],
    [{ "upload-length": "5", ...meta({ ...ok, cid: CID }) }, 400, "cid_mismatch"],
    [{ "upload-length": String(2 * MIB), ...meta(ok) }, 413, "too_large"],
    [{ "upload-length": "5", ...meta(ok) }, 412, "unsupported_version"],
  ];
  cases.at(-1)![0]["tus-resumable"] = "0.2.2";
  for (const [headers, status, code] of cases) {
    const answer = await post(headers);
    assertEquals(
      [answer.status, (await errorOf(answer)).error],
      [status, code],
      JSON.stringify(headers),
    );
  }
  const big = await post({ "upload-length": String(2 * MIB), ...meta(ok) });
  assertMatch((await errorOf(big)).message, /token \(storage signup\).*storage CLI splits/);
  assertEquals(await reserved(server), 0);
  assertEquals(await partialFiles(server.dataDir), []);
});

Deno.test("tus: the length is reserved at creation, so caps hold across PATCHes and parallel uploads", async () => {
  await using server = await startTestServer({ args: ["--sponsored-daily-cap", "5MiB"] });
  const lengths = [2 * MIB, 2 * MIB, 2 * MIB];
  const answers = await Promise.all(
    lengths.map((length, i) => tusCreate(server.url, { cid: `bafkparallel${i}`, length })),
  );
  const statuses = answers.map((a) => a.status).sort();
  assertEquals(statuses, [201, 201, 429], "two fit under 5 MiB, the third does not");
  const refused = answers.find((a) => a.status === 429)!;
  assertEquals((await errorOf(refused)).error, "rate_limited");
  assertOk(refused.headers.get("retry-after"));
  for (const answer of answers) if (answer !== refused) await answer.body?.cancel();
  assertEquals(await reserved(server), 4 * MIB);
  // The reservation counts while bytes are still missing: a plain upload cannot take them.
  const plain = await server.upload("bafkplain0001", new Uint8Array(2 * MIB));
  assertEquals([plain.status, (await errorOf(plain)).error], [429, "rate_limited"]);
  const limits = await (await server.get("/api/limits")).json();
  assertEquals(limits.usedTodayBytes, 4 * MIB);
});

Deno.test("tus: only the creator may continue, look at or end an upload", async () => {
  await using server = await startTestServer({ args: ["--trusted-proxies", "127.0.0.1"] });
  const owner = await signup(server, { email: "owner@example.org" });
  const stranger = await signup(server, { email: "stranger@example.org" });
  const url = await tusCreated(server.url, {
    cid: CID,
    length: FILE.length,
    headers: bearer(owner.token),
  });
  const sponsoredUrl = await tusCreated(server.url, {
    cid: "bafkopaque02",
    length: 10,
    headers: { "x-forwarded-for": "203.0.113.1" },
  });
  const others: [string, Record<string, string>][] = [
    [url, bearer(stranger.token)],
    [url, {}],
    [sponsoredUrl, { "x-forwarded-for": "203.0.113.2" }],
    [sponsoredUrl, bearer(owner.token)],
  ];
  for (const [target, headers] of others) {
    assertEquals((await tusHead(target, headers)).status, 404);
    const patch = await tusPatch(target, 0, new Uint8Array(5), headers);
    assertEquals([patch.status, (await errorOf(patch)).error], [404, "not_found"]);
    const end = await fetch(target, { method: "DELETE", headers: { ...TUS, ...headers } });
    assertEquals(end.status, 404);
    await end.body?.cancel();
  }
  assertEquals((await tusHead(url, bearer(owner.token))).offset, 0);
  assertEquals((await tusHead(sponsoredUrl, { "x-forwarded-for": "203.0.113.1" })).offset, 0);
});

Deno.test("tus: termination removes the bytes and the reservation; the URL is gone", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  assertEquals((await tusPatch(url, 0, FILE.slice(0, MIB))).status, 204);
  assertEquals((await partialFiles(server.dataDir)).length, 1);
  const end = await fetch(url, { method: "DELETE", headers: TUS });
  assertEquals([end.status, end.headers.get("tus-resumable")], [204, "1.0.0"]);
  assertEquals((await tusHead(url)).status, 404);
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals(await reserved(server), 0);
});

Deno.test("tus: GET answers the result once finished, 409 upload_incomplete before", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length });
  const early = await fetch(url);
  assertEquals([early.status, (await errorOf(early)).error], [409, "upload_incomplete"]);
  assertEquals((await tusPatch(url, 0, FILE)).status, 204);
  const head = await tusHead(url);
  assertEquals([head.status, head.offset], [200, FILE.length]);
  assertEquals(head.headers.get("upload-length"), String(FILE.length));
  assertEquals(head.headers.get("x-storage-cid"), CID);
  assertEquals(head.headers.get("cache-control"), "no-store");
  const result = await fetch(url);
  assertEquals(result.status, 200);
  assertEquals((await result.json()).dealId, head.headers.get("x-storage-deal-id"));
});

Deno.test("tus: HEAD echoes the metadata and the expiry, a day after the last byte", async () => {
  await using server = await startTestServer();
  const url = await tusCreated(server.url, { cid: CID, length: FILE.length, filename: "f.bin" });
  const head = await tusHead(url);
  assertEquals(
    head.headers.get("upload-metadata"),
    uploadMetadata({
      cid: CID,
      filetype: "application/octet-stream",
      filename: "f.bin",
    }),
  );
  const expires = Date.parse(head.headers.get("upload-expires")!);
  assertOk(Math.abs(expires - (Date.now() + 86_400_000)) < 5000, "24 hours from now");
});

Deno.test("tus: a manifest is committed only once every piece it lists is stored, as an upload's", async () => {
  await using server = await startTestServer();
  const parts = [seededBytes(300 * KIB, 7), seededBytes(200 * KIB, 8)];
  const whole = new Uint8Array([...parts[0], ...parts[1]]);
  const manifest = await manifestOf(
    "whole.bin",
    parts.map((bytes) => ({ cid: pieceCidOf(bytes), bytes })),
  );
  const cid = pieceCidOf(manifest);
  const send = () =>
    tusCreate(server.url, {
      cid,
      length: manifest.length,
      filetype: MANIFEST_CONTENT_TYPE,
      body: manifest,
    });
  assertEquals((await server.upload(pieceCidOf(parts[0]), parts[0])).status, 200);
  const early = await send();
  assertEquals([early.status, (await errorOf(early)).error], [400, "manifest_incomplete"]);
  assertEquals((await server.get(`/p/${cid}`)).status, 404, "nothing kept");
  assertEquals(await partialFiles(server.dataDir), []);
  assertEquals((await server.upload(pieceCidOf(parts[1]), parts[1])).status, 200);
  const done = await send();
  assertEquals([done.status, done.headers.get("x-storage-cid")], [201, cid]);
  await done.body?.cancel();
  assertEquals(new Uint8Array(await (await server.get(`/f/${cid}`)).arrayBuffer()), whole);
});
