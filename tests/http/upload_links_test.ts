/**
 * Signed upload links (auth/upload_links.ts), with curl as the link's user:
 * a token mints a link for one cid, size and type; one credential-less POST
 * of exactly that stores it as the token owner's upload (tier, quota, deal
 * owner); a second use, an expired or altered link, other terms, and a link
 * whose token was revoked are 401 invalid_link with nothing stored or
 * charged; a CAR of more blocks than the owner's tier allows is 413
 * too_many_blocks, stores and charges nothing, and has spent the link; the
 * database keeps only the link's hash. A browser's cross-origin
 * use of a link is in tests/web/upload_link_browser_test.ts.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { FakeClock } from "../helpers/clock.ts";
import { CAR_TYPE, linkedCar } from "../helpers/ipfs.ts";
import { storedPieces, tempFiles } from "../helpers/pieces.ts";
import { bearer, jtiOf, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";

const BYTES = "bytes a browser sends through a link\n";
const SIZE = new TextEncoder().encode(BYTES).byteLength;
const CID = "bafklinkupload01";

/** Mints a link with `token`; returns the answer's status and body. */
async function mint(
  server: TestServer,
  token: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, string> }> {
  const response = await fetch(`${server.url}/api/upload-links`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** POSTs `bytes` to a link with curl (no credentials); returns the status and the JSON body. */
async function curlPost(
  url: string,
  bytes: string,
  headers: string[] = ["Content-Type: text/plain"],
): Promise<{ status: number; body: Record<string, unknown> }> {
  const output = await new Deno.Command("curl", {
    args: [
      "-sS",
      "-X",
      "POST",
      "--data-binary",
      "@-",
      ...headers.flatMap((header) => ["-H", header]),
      "-w",
      "\n%{http_code}",
      url,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = output.stdin.getWriter();
  await writer.write(new TextEncoder().encode(bytes));
  await writer.close();
  const { stdout, stderr, success } = await output.output();
  assertOk(success, new TextDecoder().decode(stderr));
  const text = new TextDecoder().decode(stdout);
  const at = text.lastIndexOf("\n");
  return { status: Number(text.slice(at + 1)), body: JSON.parse(text.slice(0, at)) };
}

const TERMS = { cid: CID, size: SIZE, contentType: "text/plain", filename: "notes.txt" };

Deno.test("upload link: one credential-less POST stores exactly its terms as the owner's upload", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "owner@example.org" });
  const minted = await mint(server, token, { ...TERMS, expiresInSeconds: 600 });
  assertEquals(minted.status, 201);
  assertMatch(minted.body.url, new RegExp(`^${server.url}/api/upload-links/[A-Za-z0-9_-]{43}$`));
  const secondsLeft = (Date.parse(minted.body.expiresAt) - Date.now()) / 1000;
  assertOk(secondsLeft > 590 && secondsLeft <= 600, minted.body.expiresAt);

  const stored = await curlPost(minted.body.url, BYTES);
  assertEquals(stored.status, 200, JSON.stringify(stored.body));
  assertEquals(
    [stored.body.cid, stored.body.size, stored.body.owner],
    [CID, SIZE, "owner@example.org"],
  );
  const served = await server.get(`/p/${CID}`);
  assertEquals(await served.text(), BYTES);
  assertMatch(served.headers.get("content-disposition") ?? "", /notes\.txt/);
  // The owner's files and quota show it.
  const files = await (await server.get("/api/files", { headers: bearer(token) })).json();
  assertEquals(files.files.map((f: { cid: string }) => f.cid), [CID]);

  // The log names the route's template and a link's caller, never the link itself.
  const logged = server.logs.find((line) => line.status === 200 && line.caller === "link");
  assertEquals(logged?.route, "/api/upload-links/:link");
  assertOk(!JSON.stringify(server.logs).includes(minted.body.url.split("/").at(-1)!));
  // Used once: a second POST of the same bytes is refused, nothing more is charged.
  const again = await curlPost(minted.body.url, BYTES);
  assertEquals([again.status, again.body.error], [401, "invalid_link"]);
  const usage = await (await server.get("/api/usage", { headers: bearer(token) })).json();
  const uploads = (usage.days as { uploads: number }[]).reduce((n, d) => n + d.uploads, 0);
  assertEquals(uploads, 1);
});

Deno.test("upload link: other terms, an altered or expired link, a revoked token are 401 invalid_link", async () => {
  const clock = new FakeClock(Date.now());
  await using server = await startTestServer({ clock });
  const { token } = await signup(server, { email: "terms@example.org" });
  const { body: link } = await mint(server, token, TERMS);
  const refusals: [string, Promise<{ status: number; body: Record<string, unknown> }>][] = [
    ["other bytes of another size", curlPost(link.url, BYTES + "more")],
    ["another type", curlPost(link.url, BYTES, ["Content-Type: text/html"])],
    ["another cid", curlPost(`${link.url}?cid=bafkotherlink01`, BYTES)],
    ["another name", curlPost(link.url, BYTES, ["Content-Type: text/plain", "X-Filename: x.exe"])],
    [
      "an altered link",
      curlPost(link.url.slice(0, -1) + (link.url.endsWith("A") ? "B" : "A"), BYTES),
    ],
  ];
  for (const [what, answer] of refusals) {
    const { status, body } = await answer;
    assertEquals([status, body.error], [401, "invalid_link"], what);
  }
  assertEquals(await storedPieces(server.dataDir), []);
  // None of those spent it: the link still takes its own upload.
  assertEquals((await curlPost(link.url, BYTES)).status, 200);

  const { body: expiring } = await mint(server, token, { ...TERMS, expiresInSeconds: 60 });
  clock.advance(61_000);
  const expired = await curlPost(expiring.url, BYTES);
  assertEquals([expired.status, expired.body.error], [401, "invalid_link"]);

  clock.set(new Date().toISOString());
  const other = { ...TERMS, cid: "bafklinkrevoked1", filename: null };
  const { body: orphaned } = await mint(server, token, other);
  const revoke = await fetch(`${server.url}/api/tokens/revoke`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: JSON.stringify({ jti: jtiOf(token) }),
  });
  assertEquals(revoke.status, 200);
  await revoke.body?.cancel();
  const revoked = await curlPost(orphaned.url, BYTES);
  assertEquals([revoked.status, revoked.body.error], [401, "invalid_link"]);
  assertEquals((await server.get("/p/bafklinkrevoked1")).status, 404);
});

Deno.test("upload link: minting needs a token with put and checks the terms; the database keeps a hash", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "mint@example.org" });
  const { token: getOnly } = await signup(server, { email: "mint@example.org", scopes: ["get"] });
  const anonymous = await fetch(`${server.url}/api/upload-links`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(TERMS),
  });
  assertEquals([anonymous.status, (await anonymous.json()).error], [401, "invalid_token"]);
  assertEquals((await mint(server, getOnly, TERMS)).body.error, "insufficient_scope");
  const bad: [Record<string, unknown>, string][] = [
    [{ ...TERMS, cid: "x" }, "invalid_cid"],
    [{ ...TERMS, size: 0 }, "invalid_request"],
    [{ ...TERMS, contentType: "multipart/form-data" }, "invalid_content_type"],
    [{ ...TERMS, filename: "a\u202Eb" }, "invalid_filename"],
    [{ ...TERMS, expiresInSeconds: 3601 }, "invalid_request"],
  ];
  for (const [body, code] of bad) {
    const answer = await mint(server, token, body);
    assertEquals([answer.status, answer.body.error], [400, code]);
  }
  const { body: link } = await mint(server, token, TERMS);
  const secret = link.url.split("/").at(-1)!;
  const db = new DatabaseSync(`${server.dataDir}/storage.db`, { readOnly: true });
  const rows = db.prepare("SELECT id_hash, cid, size FROM upload_links").all();
  db.close();
  assertEquals(rows.length, 1);
  assertOk(!JSON.stringify(rows).includes(secret), "the secret is not in the table");
  assertOk(!JSON.stringify(server.logs).includes(secret), "the secret is not in the log");
});

Deno.test("upload link: the owner's quota applies, and of two racing uses one stores", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server, { email: "quota@example.org", quotaMb: 1 });
  const big = "x".repeat(1024 * 1024 + 1);
  const { body: tooBig } = await mint(server, token, {
    cid: "bafklinkquota001",
    size: big.length,
    contentType: "text/plain",
  });
  const refused = await curlPost(tooBig.url, big);
  assertEquals([refused.status, refused.body.error], [429, "quota_exceeded"]);
  assertEquals((await server.get("/p/bafklinkquota001")).status, 404);

  const { body: link } = await mint(server, token, { ...TERMS, filename: null });
  const answers = await Promise.all([curlPost(link.url, BYTES), curlPost(link.url, BYTES)]);
  assertEquals(answers.map((a) => a.status).sort(), [200, 401]);
});

Deno.test("upload link: a CAR over the owner's block cap is 413 too_many_blocks, stores and charges nothing, and spends the link", async () => {
  await using server = await startTestServer({ args: ["--car-max-blocks", "2"] });
  const { token } = await signup(server, { email: "car@example.org" });
  const usage = async () => (await server.get("/api/usage", { headers: bearer(token) })).json();
  const before = await usage();
  const { car } = await linkedCar(2); // a root and two leaves: three blocks
  const cid = "bafklinkcarover1";
  const { body: link } = await mint(server, token, {
    cid,
    size: car.length,
    contentType: CAR_TYPE,
  });
  const send = (url: string, bytes: Uint8Array<ArrayBuffer>) =>
    fetch(url, { method: "POST", headers: { "content-type": CAR_TYPE }, body: bytes });

  const refused = await send(link.url, car);
  const answer = await refused.json();
  assertEquals([refused.status, answer.error], [413, "too_many_blocks"], answer.message);
  assertEquals((await server.get(`/p/${cid}`)).status, 404);
  assertEquals(await storedPieces(server.dataDir), []);
  assertEquals(await tempFiles(server.dataDir), []);
  assertEquals(await usage(), before, "nothing charged");
  // The link is spent: the same bytes would be refused again; the owner mints a new link.
  const again = await send(link.url, car);
  assertEquals([again.status, (await again.json()).error], [401, "invalid_link"]);
  assertEquals(await storedPieces(server.dataDir), []);

  const fits = (await linkedCar(1)).car; // two blocks
  const { body: next } = await mint(server, token, {
    cid: "bafklinkcarfits1",
    size: fits.length,
    contentType: CAR_TYPE,
  });
  const stored = await send(next.url, fits);
  assertEquals([stored.status, (await stored.json()).owner], [200, "car@example.org"]);
});
