/**
 * The hand-off to a PDP storage provider, end to end: the real server with
 * --handoff pdp against the fake Curio provider (tests/helpers/fake_pdp/),
 * which fetches every piece from the server's /piece/ for real, checks its
 * PieceCID and recovers every signature. Each test waits on what the deal
 * shows (GET /api/deals/{id}) or on what the provider recorded.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { startFakePdp } from "../helpers/fake_pdp/mod.ts";
import { bearer, errorOf, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import {
  FAST_PDP,
  freePort,
  handoffArgs,
  handoffOnceSettled,
  PAYER,
  PAYER_KEY,
  startHandoffServer,
} from "../helpers/handoff.ts";
import { pieceCidOf } from "../helpers/tus_requests.ts";
import { eventually } from "../helpers/wait.ts";

const live = (h: Record<string, unknown>) => h.state === "live";

Deno.test("handoff: pieces go live at the provider, on-chain ids on each deal, one data set, every signature the payer's", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  const pieceBytes = patternBytes(5000, 1);
  const pieceCid = pieceCidOf(pieceBytes);
  const opaqueBytes = patternBytes(3000, 2);
  const uploads = [
    await server.upload(pieceCid, pieceBytes, { headers: bearer(token) }),
    await server.upload("opaquename01", opaqueBytes, { headers: bearer(token) }),
  ];
  const results = await Promise.all(uploads.map((r) => r.json()));
  assertEquals(uploads.map((r) => r.status), [200, 200]);
  const handoffs = [];
  for (const result of results) {
    handoffs.push(await handoffOnceSettled(server, token, result.dealId, live));
  }
  // The opaque upload went under its computed PieceCIDv2.
  assertEquals(handoffs.map((h) => h.pieceCid), [pieceCid, pieceCidOf(opaqueBytes)]);
  assertEquals(new Set(handoffs.map((h) => h.dataSetId)).size, 1, "one data set");
  for (const h of handoffs) {
    assertMatch(String(h.pieceId), /^\d+$/);
    assertMatch(String(h.txHash), /^0x[0-9a-f]{64}$/);
    assertEquals(h.provider, pdp.url.replace(/\/$/, ""));
    assertEquals(h.error, null);
  }
  const added = pdp.addedPieces();
  assertEquals(added.map((p) => p.pieceCid).sort(), [pieceCid, pieceCidOf(opaqueBytes)].sort());
  assertEquals(
    added.map((p) => String(p.pieceId)).sort(),
    handoffs.map((h) => String(h.pieceId)).sort(),
  );
  const signatures = pdp.signatures();
  assertOk(signatures.length > 0);
  assertOk(signatures.every((s) => s.accepted && s.recovered === PAYER.address));
  // The provider fetched each piece from the server's /piece/ by its v2, whole.
  assertEquals(
    pdp.fetches().map((f) => [f.status, f.outcome]),
    [[200, "ok"], [200, "ok"]],
  );
  const files = await (await server.get("/api/files", { headers: bearer(token) })).json();
  assertEquals(files.files.map((f: { handoff: { state: string } }) => f.handoff.state), [
    "live",
    "live",
  ]);
  const health = await (await server.get("/healthz")).json();
  assertEquals(health.handoff.answering, true);
  assertEquals(health.handoff.pieces.live, 2);
  const metrics = await (await server.get("/metrics")).text();
  assertMatch(metrics, /^storage_handoff_pieces\{state="live"\} 2$/m);
  assertMatch(metrics, /^storage_handoff_bytes\{state="live"\} 8000$/m);
  assertMatch(metrics, /^storage_handoff_requests_total\{route="pull",outcome="ok"\} \d+$/m);
  assertMatch(metrics, /^storage_handoff_oldest_queued_seconds 0$/m);
});

Deno.test("handoff: a piece the provider refuses ends failed, with what is known of why", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  const bytes = patternBytes(4000, 3);
  pdp.refusePiece(pieceCidOf(bytes));
  const result = await (await server.upload(pieceCidOf(bytes), bytes, { headers: bearer(token) }))
    .json();
  const handoff = await handoffOnceSettled(
    server,
    token,
    result.dealId,
    (h) => h.state === "failed",
  );
  assertEquals(handoff.error, "the provider could not take the piece");
  assertEquals(pdp.addedPieces(), []);
});

Deno.test("handoff: a piece under 127 bytes is ineligible and stays here", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  const response = await server.upload("tinyname01", "tiny", { headers: bearer(token) });
  const result = await response.json();
  const handoff = await handoffOnceSettled(
    server,
    token,
    result.dealId,
    (h) => h.state === "ineligible",
  );
  assertMatch(String(handoff.error), /127/);
  assertEquals(pdp.pullItems(), []);
  // Nothing to hand off: no data set is created (it costs the payer), however many runs pass.
  const runs = async () => {
    const health = await (await server.get("/healthz")).json();
    return health.jobs.find((j: { name: string }) => j.name === "handoff").lastRun;
  };
  const first = (await runs())?.finishedAt;
  await eventually(async () => (await runs())?.finishedAt !== first, "another hand-off run");
  assertEquals(pdp.signatures(), []);
});

Deno.test("handoff: --handoff-wait answers 502 stage_failed when the provider refuses; nothing charged, no deal", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp, { waitSeconds: 20 });
  const { token } = await signup(server);
  const bytes = patternBytes(4000, 4);
  const cid = pieceCidOf(bytes);
  pdp.refusePiece(cid);
  const response = await server.upload(cid, bytes, { headers: bearer(token) });
  assertEquals(response.status, 502);
  const error = await errorOf(response);
  assertEquals(error.error, "stage_failed");
  assertMatch(error.message, /the provider could not take the piece/);
  const files = await (await server.get("/api/files", { headers: bearer(token) })).json();
  assertEquals(files.files, []);
  const usage = await (await server.get("/api/usage", { headers: bearer(token) })).json();
  assertEquals(usage.days.reduce((n: number, d: { bytes: number }) => n + d.bytes, 0), 0);
  assertEquals((await server.get(`/p/${cid}`)).status === 200, false, "the bytes are gone");

  // A piece the provider takes: the upload answers once it holds it.
  const good = patternBytes(4000, 5);
  const ok = await server.upload(pieceCidOf(good), good, { headers: bearer(token) });
  assertEquals(ok.status, 200);
  const result = await ok.json();
  assertOk(["adding", "live"].includes(result.handoff.state), JSON.stringify(result.handoff));
});

Deno.test("handoff: a deleted deal's piece is removed at the provider", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp);
  const { token } = await signup(server);
  const bytes = patternBytes(6000, 6);
  const result = await (await server.upload(pieceCidOf(bytes), bytes, { headers: bearer(token) }))
    .json();
  await handoffOnceSettled(server, token, result.dealId, live);
  const deleted = await server.get(`/api/deals/${result.dealId}`, {
    method: "DELETE",
    headers: bearer(token),
  });
  assertEquals(deleted.status, 200);
  await deleted.body?.cancel();
  const handoff = await handoffOnceSettled(
    server,
    token,
    result.dealId,
    (h) => h.state === "removed",
  );
  assertMatch(String(handoff.txHash), /^0x[0-9a-f]{64}$/);
  await eventually(() => pdp.addedPieces().every((p) => p.removed), "the provider removed it");
  const removals = pdp.signatures().filter((s) => s.kind === "SchedulePieceRemovals");
  assertEquals(removals.map((s) => [s.recovered, s.accepted]), [[PAYER.address, true]]);
});

Deno.test("handoff: --handoff off (the default) changes nothing a client sees", async () => {
  await using server = await startTestServer();
  const { token } = await signup(server);
  const bytes = patternBytes(4000, 9);
  const result = await (await server.upload(pieceCidOf(bytes), bytes, { headers: bearer(token) }))
    .json();
  assertEquals("handoff" in result, false);
  const deal = await (await server.get(`/api/deals/${result.dealId}`, { headers: bearer(token) }))
    .json();
  assertEquals("handoff" in deal, false);
  const files = await (await server.get("/api/files", { headers: bearer(token) })).json();
  assertEquals("handoff" in files.files[0], false);
  const health = await (await server.get("/healthz")).json();
  assertEquals("handoff" in health, false);
  assertEquals(health.jobs.some((j: { name: string }) => j.name === "handoff"), false);
  assertEquals((await (await server.get("/metrics")).text()).includes("storage_handoff"), false);
});

Deno.test("handoff: a missing or inconsistent setting is a one-line start-up error", async () => {
  const start = (args: string[]) =>
    startTestServer({ args }).then(() => "started", (e) => String(e));
  assertMatch(
    await start(["--handoff", "pdp"]),
    /--handoff pdp needs --pdp-url, --pdp-record-keeper/,
  );
  assertMatch(await start(["--pdp-url", "http://127.0.0.1:1"]), /--pdp-url is for --handoff pdp/);
  assertMatch(await start(["--chain-id", "1"]), /--chain-id must be one of 314, 314159, 31415926/);
  await using pdp = await startFakePdp(FAST_PDP);
  const dir = await Deno.makeTempDir({ prefix: "storage-handoff-start-" });
  try {
    const args = await handoffArgs(pdp, dir, freePort());
    const without = (flag: string) => {
      const at = args.indexOf(flag);
      return [...args.slice(0, at), ...args.slice(at + 2)];
    };
    // The provider pulls from --base-url: it must be https unless local testing says so.
    assertMatch(
      await start(without("--pdp-allow-http-source")),
      /must be https:\/\/ .*--pdp-allow-http-source true/,
    );
    assertMatch(await start(without("--base-url")), /--handoff pdp needs --base-url/);
    await Deno.chmod(`${dir}/pdp.key`, 0o644);
    const readable = await start(args);
    assertMatch(readable, /pdp\.key is readable by others \(mode 644\): chmod 600 it/);
    assertEquals(readable.includes(PAYER_KEY.slice(2)), false, "the key is never in a message");
    await Deno.writeTextFile(`${dir}/pdp.key`, "not a key", { mode: 0o600 });
    await Deno.chmod(`${dir}/pdp.key`, 0o600);
    assertMatch(await start(args), /must hold a 32-byte hex private key/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("handoff: local gc waits for a piece the provider is pulling", async () => {
  await using pdp = await startFakePdp(FAST_PDP);
  await using server = await startHandoffServer(pdp, {
    args: ["--retention-grace-days", "0"],
  });
  const { token } = await signup(server);
  pdp.holdPulls();
  const bytes = patternBytes(7000, 12);
  const cid = pieceCidOf(bytes);
  const result = await (await server.upload(cid, bytes, { headers: bearer(token) })).json();
  await handoffOnceSettled(server, token, result.dealId, (h) => h.state === "pulling");
  const deleted = await server.get(`/api/deals/${result.dealId}`, {
    method: "DELETE",
    headers: bearer(token),
  });
  await deleted.body?.cancel();
  const asOf = Date.now() + 60_000;
  const held = await server.server.gc.sweep({ asOf });
  assertEquals(held?.removedPieces, 0, "the provider is reading it: it stays");
  assertEquals((await server.get(`/p/${cid}`)).status, 200);
  pdp.releasePulls();
  // Pulled, then added: no deal keeps it, so it is removed at the provider, then here.
  await handoffOnceSettled(server, token, result.dealId, (h) => h.state === "removed");
  const swept = await server.server.gc.sweep({ asOf });
  assertEquals(swept?.removedPieces, 1);
  assertEquals((await server.get(`/p/${cid}`)).status, 410);
});
