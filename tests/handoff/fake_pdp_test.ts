/**
 * The fake PDP provider (tests/helpers/fake_pdp/) driven by the ecosystem's
 * own client, synapse-core's `sp` functions and typed-data signers with a
 * viem local account, against a tiny piece source on 127.0.0.1: the whole
 * round (pull, create, add, poll, list, delete), and the refusals a real
 * Curio gives. Status codes a synapse-core error does not carry are read by
 * sending the same signed body with fetch. Every wait polls something
 * observable; nothing sleeps.
 */
import * as SP from "@filoz/synapse-core/sp";
import * as Piece from "@filoz/synapse-core/piece";
import { calibration } from "@filoz/synapse-core/chains";
import {
  signAddPieces,
  signCreateDataSet,
  signCreateDataSetAndAddPieces,
} from "@filoz/synapse-core/typed-data";
import { createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { eventually } from "../helpers/wait.ts";
import { FAST_PDP } from "../helpers/handoff.ts";
import { type FakePdp, startFakePdp } from "../helpers/fake_pdp/mod.ts";
import { pieceCidOfStream } from "../../src/kernel/piece_cid/mod.ts";

const PAYER = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const INTRUDER = privateKeyToAccount(
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
);
const client = (account = PAYER) =>
  createWalletClient({ account, chain: calibration, transport: http() });
const RECORD_KEEPER = calibration.contracts.fwss.address;
const POLL = { pollInterval: 10, timeout: 10_000 };

const FAST = FAST_PDP;

interface TestPiece {
  cid: string;
  bytes: Uint8Array<ArrayBuffer>;
}

async function makePiece(seed: number, size = 1000 + seed): Promise<TestPiece> {
  const bytes = Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed * 7) & 255);
  const { cid } = await pieceCidOfStream(ReadableStream.from([bytes]));
  return { cid, bytes };
}

/**
 * "206": the whole piece, but as a partial answer; "short": 200 with the last byte missing;
 * "altered": 200, the right length, one byte changed; "500": always busy; "500-once": busy once.
 */
type SourceMode = "ok" | "206" | "short" | "altered" | "500-once" | "500";

/** A piece source: GET /piece/{PieceCIDv2}, answering each piece as its mode says. */
function startSource(pieces: TestPiece[], modes: Record<string, SourceMode> = {}) {
  const served = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const cid = new URL(request.url).pathname.split("/").pop()!;
    const piece = pieces.find((p) => p.cid === cid);
    if (!piece) return new Response("not found", { status: 404 });
    const count = (served.get(cid) ?? 0) + 1;
    served.set(cid, count);
    const mode = modes[cid] ?? "ok";
    if (mode === "206") {
      const range = `bytes 0-${piece.bytes.length - 1}/${piece.bytes.length}`;
      return new Response(piece.bytes, { status: 206, headers: { "content-range": range } });
    }
    if (mode === "short") return new Response(piece.bytes.slice(0, -1));
    if (mode === "altered") {
      const altered = piece.bytes.slice();
      altered[0] ^= 1;
      return new Response(altered);
    }
    if (mode === "500" || (mode === "500-once" && count === 1)) {
      return new Response("busy", { status: 500 });
    }
    return new Response(piece.bytes);
  });
  const url = (piece: TestPiece) => `http://127.0.0.1:${server.addr.port}/piece/${piece.cid}`;
  return {
    url,
    served,
    [Symbol.asyncDispose]: async () => {
      await server.shutdown();
    },
  };
}

const pullInput = (source: ReturnType<typeof startSource>, pieces: TestPiece[]) =>
  pieces.map((p) => ({ pieceCid: Piece.parse(p.cid), sourceUrl: source.url(p) }));

/** Pulls into a new data set (create-and-add extraData) and waits for the batch to settle. */
function pullNew(
  pdp: FakePdp,
  source: ReturnType<typeof startSource>,
  pieces: TestPiece[],
  extra: { clientDataSetId?: bigint; nonce?: bigint } = {},
) {
  return SP.waitForPullPieces(client(), {
    serviceURL: pdp.url,
    payee: pdp.options.payee,
    pieces: pullInput(source, pieces),
    ...extra,
    ...POLL,
  });
}

/** Creates a data set for PAYER and waits until Curio has recorded it. */
async function createDataSet(pdp: FakePdp, clientDataSetId: bigint): Promise<bigint> {
  const { statusUrl } = await SP.createDataSet(client(), {
    serviceURL: pdp.url,
    payee: pdp.options.payee,
    cdn: false,
    clientDataSetId,
  });
  return (await SP.waitForCreateDataSet({ statusUrl, ...POLL })).dataSetId;
}

async function post(url: string, body: unknown, method = "POST") {
  const response = await fetch(url, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** The first stage of each kind a status URL passes through, until `done` holds. */
async function stagesOf(url: string, done: (body: Record<string, unknown>) => boolean) {
  const seen: string[] = [];
  await eventually(async () => {
    const body = await (await fetch(url)).json();
    const ok = "ok" in body ? body.ok : body.addMessageOk;
    const stage = `${body.txStatus}/${ok}/${body.dataSetCreated ?? body.piecesAdded}`;
    if (seen.at(-1) !== stage) seen.push(stage);
    return done(body);
  }, `${url} to settle`);
  return seen;
}

Deno.test("a full round: ping, pull, create, add, poll, list, delete, gone", async () => {
  await using pdp = await startFakePdp({ ...FAST, confirmAfterMs: 150, settleAfterMs: 150 });
  const piece = await makePiece(1);
  await using source = startSource([piece]);
  assertEquals(await SP.ping(pdp.url) !== undefined, true);

  const pulled = await pullNew(pdp, source, [piece], { clientDataSetId: 7n, nonce: 70n });
  assertEquals(pulled, {
    status: "complete",
    pieces: [{ pieceCid: piece.cid, status: "complete" }],
  });
  assertEquals(pdp.pulledPieces(), [piece.cid]);
  assertEquals(pdp.fetches().map((f) => [f.status, f.outcome]), [[200, "ok"]]);

  const created = await SP.createDataSet(client(), {
    serviceURL: pdp.url,
    payee: pdp.options.payee,
    cdn: false,
    clientDataSetId: 7n,
  });
  assertMatch(created.statusUrl, /\/pdp\/data-sets\/created\/0x[0-9a-f]{64}$/);
  const createStages = await stagesOf(created.statusUrl, (b) => b.dataSetCreated === true);
  assertEquals(createStages, ["pending/null/false", "confirmed/true/false", "confirmed/true/true"]);
  const { dataSetId } = await SP.waitForCreateDataSet({ statusUrl: created.statusUrl, ...POLL });

  const added = await SP.addPieces(client(), {
    serviceURL: pdp.url,
    dataSetId,
    clientDataSetId: 7n,
    nonce: 70n,
    pieces: [{ pieceCid: Piece.parse(piece.cid) }],
  });
  assertMatch(added.statusUrl, new RegExp(`/pdp/data-sets/${dataSetId}/pieces/added/0x`));
  const addStages = await stagesOf(added.statusUrl, (b) => b.piecesAdded === true);
  assertEquals(addStages, ["pending/null/false", "confirmed/true/false", "confirmed/true/true"]);
  const { confirmedPieceIds } = await SP.waitForAddPieces({ statusUrl: added.statusUrl, ...POLL });
  assertEquals(confirmedPieceIds, [0n]);

  const listed = await SP.getDataSet({ serviceURL: pdp.url, dataSetId });
  assertEquals(listed.pieces.map((p) => [p.pieceId, p.pieceCid.toString()]), [[0n, piece.cid]]);

  const deleted = await SP.schedulePieceDeletion(client(), {
    serviceURL: pdp.url,
    dataSetId,
    clientDataSetId: 7n,
    pieceId: 0n,
  });
  assertMatch(deleted.hash, /^0x[0-9a-f]{64}$/);
  await eventually(async () => {
    const { pieces } = await SP.getDataSet({ serviceURL: pdp.url, dataSetId });
    return pieces.length === 0;
  }, "the removed piece to drop out of the data set");
  assertEquals(pdp.addedPieces().map((p) => p.removed), [true]);
  const signers = pdp.signatures().map((s) => [s.kind, s.recovered, s.accepted]);
  assertEquals(signers, [
    ["CreateDataSet", PAYER.address, true],
    ["AddPieces", PAYER.address, true],
    ["CreateDataSet", PAYER.address, true],
    ["AddPieces", PAYER.address, true],
    ["SchedulePieceRemovals", PAYER.address, true],
  ]);
});

Deno.test("a wrong signer is refused: 400 on a pull, 500 on a create or an add", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(2);
  await using source = startSource([piece]);
  const pieces = [{ pieceCid: Piece.parse(piece.cid) }];
  const payee = pdp.options.payee;

  // The intruder signs for PAYER's money: the payer field names PAYER, the signature is not his.
  const forged = await signCreateDataSetAndAddPieces(client(INTRUDER), {
    payee,
    payer: PAYER.address,
    pieces,
  });
  const pullBody = {
    extraData: forged,
    recordKeeper: RECORD_KEEPER,
    pieces: [{ pieceCid: piece.cid, sourceUrl: source.url(piece) }],
  };
  const pull = await post(`${pdp.url}pdp/piece/pull`, pullBody);
  assertEquals(pull.status, 400);
  assertMatch(pull.text, /extraData validation failed/);
  let thrown = await SP.pullPieces(client(INTRUDER), {
    serviceURL: pdp.url,
    payee,
    payer: PAYER.address,
    pieces: pullInput(source, [piece]),
  }).catch((error) => error);
  assertEquals(thrown?.name, "PullError");
  assertEquals(source.served.size, 0);

  const forgedCreate = await signCreateDataSet(client(INTRUDER), { payee, payer: PAYER.address });
  const body = { recordKeeper: RECORD_KEEPER, extraData: forgedCreate };
  const create = await post(`${pdp.url}pdp/data-sets`, body);
  assertEquals(create.status, 500);
  assertMatch(create.text, /failed to estimate gas.*InvalidSignature/);
  thrown = await SP.createDataSet(client(INTRUDER), {
    serviceURL: pdp.url,
    payee,
    payer: PAYER.address,
    cdn: false,
  }).catch((error) => error);
  assertEquals(thrown?.name, "CreateDataSetError");

  await pullNew(pdp, source, [piece]);
  const dataSetId = await createDataSet(pdp, 11n);
  const forgedAdd = await signAddPieces(client(INTRUDER), { clientDataSetId: 11n, pieces });
  const addUrl = `${pdp.url}pdp/data-sets/${dataSetId}/pieces`;
  const add = await post(addUrl, {
    pieces: [{ pieceCid: piece.cid, subPieces: [{ subPieceCid: piece.cid }] }],
    extraData: forgedAdd,
  });
  assertEquals(add.status, 500);
  assertMatch(add.text, /failed to estimate gas/);
  const refused = pdp.signatures().filter((s) => !s.accepted);
  assertOk(refused.length >= 4, "every forged signature is logged as refused");
  assertOk(refused.every((s) => s.recovered === INTRUDER.address && s.payer === PAYER.address));
});

Deno.test("a spent nonce or clientDataSetId is refused (500 on add and create, 400 on pull)", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(3);
  await using source = startSource([piece]);
  await pullNew(pdp, source, [piece]);
  const dataSetId = await createDataSet(pdp, 21n);
  const add = (nonce: bigint) =>
    SP.addPieces(client(), {
      serviceURL: pdp.url,
      dataSetId,
      clientDataSetId: 21n,
      nonce,
      pieces: [{ pieceCid: Piece.parse(piece.cid) }],
    });
  const first = await add(5n);
  await SP.waitForAddPieces({ statusUrl: first.statusUrl, ...POLL });

  const again = await add(5n).catch((error) => error);
  assertEquals(again?.name, "AddPiecesError");
  const extraData = await signAddPieces(client(), {
    clientDataSetId: 21n,
    nonce: 5n,
    pieces: [{ pieceCid: Piece.parse(piece.cid) }],
  });
  const raw = await post(`${pdp.url}pdp/data-sets/${dataSetId}/pieces`, {
    pieces: [{ pieceCid: piece.cid, subPieces: [{ subPieceCid: piece.cid }] }],
    extraData,
  });
  assertEquals(raw.status, 500);
  assertMatch(raw.text, /ClientDataSetAlreadyRegistered\(5\)/);

  const pull = await post(`${pdp.url}pdp/piece/pull`, {
    extraData,
    dataSetId: Number(dataSetId),
    pieces: [{ pieceCid: piece.cid, sourceUrl: source.url(piece) }],
  });
  assertEquals(pull.status, 400);
  assertMatch(pull.text, /ClientDataSetAlreadyRegistered\(5\)/);

  const reused = await signCreateDataSet(client(), {
    payee: pdp.options.payee,
    clientDataSetId: 21n,
  });
  const create = await post(`${pdp.url}pdp/data-sets`, {
    recordKeeper: RECORD_KEEPER,
    extraData: reused,
  });
  assertEquals(create.status, 500);
  assertMatch(create.text, /ClientDataSetAlreadyRegistered\(21\)/);
});

Deno.test("a refused piece fails in the pull answer while another completes: the batch is complete", async () => {
  await using pdp = await startFakePdp(FAST);
  const good = await makePiece(4);
  const bad = await makePiece(5);
  await using source = startSource([good, bad]);
  pdp.refusePiece(bad.cid);
  const answer = await pullNew(pdp, source, [good, bad]);
  assertEquals(answer.status, "complete");
  const byCid = Object.fromEntries(answer.pieces.map((p) => [p.pieceCid, p.status]));
  assertEquals(byCid, { [good.cid]: "complete", [bad.cid]: "failed" });
  assertOk(answer.pieces.every((p) => Object.keys(p).join() === "pieceCid,status"), "no reason");
  assertEquals(source.served.get(bad.cid), undefined);
  assertEquals(pdp.pulledPieces(), [good.cid]);
});

Deno.test("a source answering 206, a short body or other bytes fails its piece", async () => {
  await using pdp = await startFakePdp(FAST);
  const [partial, short, altered, whole] = await Promise.all(
    [6, 7, 8, 9].map((seed) => makePiece(seed)),
  );
  await using source = startSource([partial, short, altered, whole], {
    [partial.cid]: "206",
    [short.cid]: "short",
    [altered.cid]: "altered",
  });
  const answer = await pullNew(pdp, source, [partial, short, altered, whole]);
  const byCid = Object.fromEntries(answer.pieces.map((p) => [p.pieceCid, p.status]));
  assertEquals(byCid, {
    [partial.cid]: "failed",
    [short.cid]: "failed",
    [altered.cid]: "failed",
    [whole.cid]: "complete",
  });
  assertEquals(answer.status, "complete");
  const reasons = Object.fromEntries(pdp.pullItems().map((i) => [i.pieceCid, i.failReason]));
  assertMatch(reasons[partial.cid]!, /^HTTP status 206 from source$/);
  assertMatch(reasons[short.cid]!, /^size mismatch: expected 1007, got 1006$/);
  assertMatch(reasons[altered.cid]!, /^CommP mismatch/);
  assertEquals(pdp.pulledPieces(), [whole.cid]);

  const alone = await pullNew(pdp, source, [partial]);
  assertEquals(alone.status, "failed");
});

Deno.test("a pull without a data set creates none; create-and-add then does, with the piece", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(22);
  await using source = startSource([piece]);
  const payee = pdp.options.payee;
  const pieces = [{ pieceCid: Piece.parse(piece.cid) }];
  const extraData = await signCreateDataSetAndAddPieces(client(), {
    payee,
    clientDataSetId: 61n,
    nonce: 62n,
    pieces,
  });
  const pulled = await SP.waitForPullPieces(client(), {
    serviceURL: pdp.url,
    payee,
    pieces: pullInput(source, [piece]),
    extraData,
    ...POLL,
  });
  assertEquals(pulled.status, "complete");
  const none = await fetch(`${pdp.url}pdp/data-sets/1`);
  await none.body?.cancel();
  assertEquals([none.status, pdp.addedPieces()], [404, []]);

  const { statusUrl } = await SP.createDataSetAndAddPieces(client(), {
    serviceURL: pdp.url,
    payee,
    pieces,
    extraData,
  });
  const created = await SP.waitForCreateDataSet({ statusUrl, ...POLL });
  const addedUrl =
    `${pdp.url}pdp/data-sets/${created.dataSetId}/pieces/added/${created.createMessageHash}`;
  const added = await SP.waitForAddPieces({ statusUrl: addedUrl, ...POLL });
  assertEquals(added.confirmedPieceIds, [0n]);
  assertEquals(pdp.addedPieces().map((p) => [p.pieceId, p.pieceCid]), [[0, piece.cid]]);
});

Deno.test("a pull answer lists pieces by PieceCIDv1, not in request order", async () => {
  await using pdp = await startFakePdp(FAST);
  const pieces = await Promise.all([30, 31, 32, 33, 34].map((seed) => makePiece(seed)));
  await using source = startSource(pieces);
  const v1 = new Map(
    await Promise.all(pieces.map(async (p) => {
      const { cidV1 } = await pieceCidOfStream(ReadableStream.from([p.bytes]));
      return [p.cid, cidV1] as const;
    })),
  );
  const byV1 = [...pieces].sort((a, b) => v1.get(a.cid)! < v1.get(b.cid)! ? -1 : 1);
  const requested = [...byV1].reverse();
  const answer = await pullNew(pdp, source, requested);
  assertEquals(answer.pieces.map((p) => p.pieceCid), byV1.map((p) => p.cid));
  assertOk(byV1.map((p) => p.cid).join() !== requested.map((p) => p.cid).join());
});

Deno.test("a transient source failure sends the piece back to pending, then it is retried", async () => {
  await using pdp = await startFakePdp({ ...FAST, retryDelaysMs: [400, 400] });
  const piece = await makePiece(14);
  await using source = startSource([piece], { [piece.cid]: "500-once" });
  const options = {
    serviceURL: pdp.url,
    payee: pdp.options.payee,
    clientDataSetId: 51n,
    nonce: 52n,
    pieces: pullInput(source, [piece]),
  };
  await SP.pullPieces(client(), options);
  await eventually(() => pdp.pullItems()[0].attempts === 1, "the first attempt to fail");
  const between = await SP.pullPieces(client(), options);
  assertEquals(between, {
    status: "pending",
    pieces: [{ pieceCid: piece.cid, status: "pending" }],
  });
  const answer = await SP.waitForPullPieces(client(), { ...options, ...POLL });
  assertEquals(answer.status, "complete");
  assertEquals(pdp.fetches().map((f) => [f.status, f.outcome]), [[500, "transient"], [200, "ok"]]);
});

Deno.test("a piece failing transiently three times fails for good", async () => {
  await using pdp = await startFakePdp({ ...FAST, retryDelaysMs: [5, 5] });
  const piece = await makePiece(21);
  await using source = startSource([piece], { [piece.cid]: "500" });
  const answer = await pullNew(pdp, source, [piece]);
  assertEquals(answer.status, "failed");
  assertEquals(source.served.get(piece.cid), 3);
  assertEquals(pdp.pullItems()[0].failReason, "HTTP status 500 from source");
});

Deno.test("held pulls fetch nothing until released; the same pull is answered, not repeated", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(15);
  await using source = startSource([piece]);
  pdp.holdPulls();
  const options = {
    serviceURL: pdp.url,
    payee: pdp.options.payee,
    clientDataSetId: 31n,
    nonce: 32n,
    pieces: pullInput(source, [piece]),
  };
  const first = await SP.pullPieces(client(), options);
  assertEquals(first.status, "pending");
  await pdp.tick();
  assertEquals((await SP.pullPieces(client(), options)).status, "pending");
  assertEquals(source.served.size, 0);
  pdp.releasePulls();
  await eventually(
    async () => (await SP.pullPieces(client(), options)).status === "complete",
    "release",
  );
  assertEquals(pdp.pullItems().length, 1);
});

Deno.test("too many pending pieces: 429 with Retry-After", async () => {
  await using pdp = await startFakePdp({ ...FAST, pullGlobalPendingLimit: 2 });
  const pieces = await Promise.all([16, 17, 18].map((seed) => makePiece(seed)));
  await using source = startSource(pieces);
  pdp.holdPulls();
  const extraData = await signCreateDataSetAndAddPieces(client(), {
    payee: pdp.options.payee,
    pieces: pieces.map((p) => ({ pieceCid: Piece.parse(p.cid) })),
  });
  const response = await fetch(`${pdp.url}pdp/piece/pull`, {
    method: "POST",
    body: JSON.stringify({
      extraData,
      recordKeeper: RECORD_KEEPER,
      pieces: pieces.map((p) => ({ pieceCid: p.cid, sourceUrl: source.url(p) })),
    }),
  });
  assertEquals([response.status, response.headers.get("retry-after")], [429, "60"]);
  await response.body?.cancel();
  assertEquals(pdp.pullItems().length, 0);
});

Deno.test("five adds to a missing data set block the client from every route", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(19);
  const body = {
    pieces: [{ pieceCid: piece.cid, subPieces: [{ subPieceCid: piece.cid }] }],
    extraData: "0x00" as Hex,
  };
  const statuses = [];
  for (let i = 0; i < 5; i++) {
    statuses.push((await post(`${pdp.url}pdp/data-sets/99/pieces`, body)).status);
  }
  assertEquals(statuses, [404, 404, 404, 404, 429]);
  const ping = await fetch(`${pdp.url}pdp/ping`);
  await ping.body?.cancel();
  const retryAfter = Number(ping.headers.get("retry-after"));
  assertEquals(ping.status, 429);
  assertOk(retryAfter > 290 && retryAfter <= 300, `blocked for 5 minutes: ${retryAfter}`);
});

Deno.test("the same piece added twice gets a second piece id", async () => {
  await using pdp = await startFakePdp(FAST);
  const piece = await makePiece(20);
  await using source = startSource([piece]);
  await pullNew(pdp, source, [piece]);
  const dataSetId = await createDataSet(pdp, 41n);
  const ids: bigint[] = [];
  for (const nonce of [1n, 2n]) {
    const { statusUrl } = await SP.addPieces(client(), {
      serviceURL: pdp.url,
      dataSetId,
      clientDataSetId: 41n,
      nonce,
      pieces: [{ pieceCid: Piece.parse(piece.cid) }],
    });
    ids.push(...(await SP.waitForAddPieces({ statusUrl, ...POLL })).confirmedPieceIds);
  }
  assertEquals(ids, [0n, 1n]);
  const { pieces } = await SP.getDataSet({ serviceURL: pdp.url, dataSetId });
  assertEquals(pieces.map((p) => p.pieceCid.toString()), [piece.cid, piece.cid]);
});

Deno.test("a provider that is down refuses connections or answers 503, then comes back", async () => {
  await using pdp = await startFakePdp(FAST);
  await pdp.goDown("refused");
  const refused = await SP.ping(pdp.url).catch((error) => error);
  assertOk(refused instanceof Error, "ping fails while the port is closed");
  assertOk(await fetch(pdp.url + "pdp/ping").then(() => false, () => true), "connection refused");
  pdp.comeUp();
  await pdp.goDown("503");
  const unavailable = await fetch(`${pdp.url}pdp/ping`);
  assertEquals(unavailable.status, 503);
  await unavailable.body?.cancel();
  pdp.comeUp();
  const back = await fetch(`${pdp.url}pdp/ping`);
  assertEquals([back.status, await back.text()], [200, "curio-pdp"]);
});
