/**
 * What real clients send: IPFS tools' CIDs, curl's and browsers' form
 * bodies, browser preflights for conditional requests and the headers
 * browser code needs to read. Each test fails without its fix.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { sha256 } from "../helpers/bytes.ts";
import { errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import { storedPieces } from "../helpers/pieces.ts";
import { sha256Cid } from "../../src/kernel/piece_cid/cid_codec.ts";
import { assertErrorAnswer } from "../helpers/error_answers.ts";

const DAG_PB = 0x70;
const DAG_CBOR = 0x71;

Deno.test("cids: a sha2-256 CID of another codec than raw is a name, not a claim about the bytes", async () => {
  await using server = await startTestServer();
  const file = patternBytes(300 * 1024);
  // `ipfs add --cid-version 1` of a file over 256 KiB gives a dag-pb root: its digest is
  // that of the encoded root block, never the file's. It must be accepted as a name.
  const dagPbRoot = sha256Cid(
    await sha256(new TextEncoder().encode("a dag-pb root block")),
    DAG_PB,
  );
  const upload = await server.upload(dagPbRoot, file);
  assertEquals(upload.status, 200, await upload.clone().text());
  assertEquals((await upload.json()).cid, dagPbRoot);
  assertEquals(new Uint8Array(await (await server.get(`/p/${dagPbRoot}`)).arrayBuffer()), file);
  // A dag-cbor CID of the bytes' own SHA-256 is equally just a name.
  const madeUp = sha256Cid(await sha256(file), DAG_CBOR);
  assertEquals((await server.upload(madeUp, file)).status, 200);
  // raw ("bafkrei…") is the one sha2-256 form that names the bytes: still verified.
  const raw = sha256Cid(await sha256(file));
  const mismatch = await server.upload(raw, patternBytes(300 * 1024, 1));
  await assertErrorAnswer(mismatch, 400, "cid_mismatch");
});

Deno.test("cids: --require-verifiable-cids refuses non-raw sha2-256 CIDs as unverifiable", async () => {
  await using server = await startTestServer({ args: ["--require-verifiable-cids", "true"] });
  const cid = sha256Cid(await sha256(new Uint8Array([1])), DAG_PB);
  const response = await server.upload(cid, "x");
  await assertErrorAnswer(response, 400, "invalid_cid");
});

Deno.test("forms: multipart and urlencoded bodies are refused with what to send instead", async () => {
  await using server = await startTestServer();
  const form = new FormData();
  form.append("file", new Blob([patternBytes(1000)]), "x.bin");
  // What `curl -F file=@x.bin` and `fetch(url, {body: formData})` send.
  const multipart = await fetch(`${server.url}/api/upload?cid=formupload001`, {
    method: "POST",
    body: form,
  });
  assertEquals(multipart.status, 400);
  assertEquals(multipart.headers.get("content-type"), "application/json");
  const multipartError = await errorOf(multipart);
  assertEquals(multipartError.error, "invalid_content_type");
  assertMatch(multipartError.message, /raw bytes/);
  // What `curl --data-binary @x.bin` sends without -H Content-Type.
  const urlencoded = await server.upload("formupload002", patternBytes(1000), {
    contentType: "application/x-www-form-urlencoded",
  });
  assertEquals(urlencoded.status, 400);
  const urlencodedError = await errorOf(urlencoded);
  assertEquals(urlencodedError.error, "invalid_content_type");
  assertMatch(urlencodedError.message, /Content-Type: application\/octet-stream/);
  // Parameters and case do not hide a form.
  const cased = await server.upload("formupload003", "a=b", {
    contentType: "Application/X-WWW-Form-Urlencoded; charset=UTF-8",
  });
  assertEquals((await errorOf(cased)).error, "invalid_content_type");
  assertEquals(await storedPieces(server.dataDir), []);
  const usage = await server.server.services.ledger.status("ip:v4:127.0.0.1", 1);
  assertEquals([usage.usedBytes, usage.reservedBytes], [0, 0]);
});

Deno.test("cors: preflights allow If-None-Match and WWW-Authenticate is exposed", async () => {
  await using server = await startTestServer();
  const preflight = await server.get("/p/bafkreiconditional", {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "GET",
      "access-control-request-headers": "if-none-match",
    },
  });
  assertEquals(preflight.status, 204);
  const allowed = preflight.headers.get("access-control-allow-headers")!.toLowerCase().split(
    /,\s*/,
  );
  assertEquals(allowed.includes("if-none-match"), true, allowed.join(","));
  const unauthorized = await server.get("/api/files", { headers: { authorization: "Bearer x" } });
  assertEquals(unauthorized.status, 401);
  await unauthorized.body?.cancel();
  const exposed = unauthorized.headers.get("access-control-expose-headers")!.toLowerCase();
  for (const name of ["www-authenticate", "retry-after", "ratelimit", "deprecation", "link"]) {
    assertMatch(exposed, new RegExp(`(^|, )${name}(,|$)`), name);
  }
});
