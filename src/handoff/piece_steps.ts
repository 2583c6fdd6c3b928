/**
 * The pieces' steps at the provider (worker.ts runs them in this order each
 * run): pulls (sent, and sent again with the same body until each piece's own
 * status settles), adds (at most 40 pieces a call, polled at their Location;
 * an add in doubt is reconciled against the data set's listing before its
 * pieces go again under a new nonce), and removals of pieces no deal keeps.
 */
import type { HandoffCall, HandoffDataSet, HandoffPiece } from "../domain/handoff_records.ts";
import {
  type AddBody,
  type DataSetListing,
  newCall,
  type RemoveBody,
  type StepContext,
} from "./context.ts";
import { randomUint256 } from "./payer.ts";
import { ProviderRefused, type PullBody, type PullStatus } from "./pdp_provider.ts";

/** Pieces in one pull: Curio lets one client hold 10 pending pieces while others wait. */
const PULL_BATCH = 10;
/** Pulls open at once. */
const MAX_OPEN_PULLS = 4;
/** Pieces in one AddPieces call (the Warm Storage rule). */
const ADD_BATCH = 40;
/** Removals started per run. */
const REMOVAL_BATCH = 40;

/** Curio names no reason in a pull answer; this is what is known. */
export const PULL_FAILED = "the provider could not take the piece";

export async function startPulls(ctx: StepContext, dataSet: HandoffDataSet): Promise<void> {
  const { records, payer, recordKeeper, baseUrl, clock } = ctx.o;
  let open = (await records.openCalls("pull")).length;
  while (open < MAX_OPEN_PULLS) {
    const pieces = await records.readyToPull(PULL_BATCH);
    if (pieces.length === 0) return;
    const v2s = pieces.map((p) => p.pieceCidV2!);
    const extraData = await payer.signAddPieces(
      BigInt(dataSet.clientDataSetId),
      v2s,
      randomUint256(),
    );
    const body: PullBody = {
      extraData,
      recordKeeper,
      pieces: v2s.map((pieceCid) => ({ pieceCid, sourceUrl: `${baseUrl}/piece/${pieceCid}` })),
      dataSetId: dataSet.dataSetId!,
    };
    const call = newCall(ctx.provider, "pull", body, clock.now());
    await records.openCall(call, pieces.map((p) => p.cid), "pulling");
    open++;
    await sendPull(ctx, call, body);
  }
}

export async function pollPulls(ctx: StepContext): Promise<void> {
  for (const call of await ctx.o.records.openCalls("pull")) {
    await sendPull(ctx, call, JSON.parse(call.body) as PullBody);
  }
}

async function sendPull(ctx: StepContext, call: HandoffCall, body: PullBody): Promise<void> {
  const { records, provider, clock } = ctx.o;
  const pieces = await records.piecesOfCall(call.id);
  let statuses: { pieceCid: string; status: PullStatus }[];
  try {
    statuses = await provider.pull(body);
  } catch (error) {
    if (!(error instanceof ProviderRefused)) throw error;
    ctx.answered();
    await ctx.fail(pieces, `the provider refused the pull: ${error.message}`);
    await records.closeCall(call.id, clock.now());
    return;
  }
  ctx.answered();
  const now = clock.now();
  const statusOf = new Map(statuses.map((s) => [s.pieceCid, s.status]));
  const complete = pieces.filter((p) => statusOf.get(p.pieceCidV2!) === "complete");
  const failed = pieces.filter((p) => statusOf.get(p.pieceCidV2!) === "failed");
  await records.move(complete.map((p) => p.cid), {
    from: ["pulling"],
    to: "adding",
    at: now,
    callId: null,
  });
  await ctx.fail(failed, PULL_FAILED);
  if (complete.length + failed.length === pieces.length) await records.closeCall(call.id, now);
}

export async function startAdds(ctx: StepContext, dataSet: HandoffDataSet): Promise<void> {
  const { records, payer, clock } = ctx.o;
  const pieces = await records.idle("adding", ADD_BATCH);
  if (pieces.length === 0) return;
  const pieceCids = pieces.map((p) => p.pieceCidV2!);
  const extraData = await payer.signAddPieces(
    BigInt(dataSet.clientDataSetId),
    pieceCids,
    randomUint256(),
  );
  const body: AddBody = { dataSetId: dataSet.dataSetId!, pieceCids, extraData };
  const call = newCall(ctx.provider, "add", body, clock.now());
  await records.openCall(call, pieces.map((p) => p.cid), "adding");
  await sendAdd(ctx, call, body, pieces);
}

async function sendAdd(
  ctx: StepContext,
  call: HandoffCall,
  body: AddBody,
  pieces: HandoffPiece[],
): Promise<void> {
  const { records, provider } = ctx.o;
  let sent: { statusUrl: string; txHash: string } | null;
  try {
    sent = await ctx.refusable(call, () => provider.addPieces(body));
  } catch (error) {
    if (!(error instanceof ProviderRefused)) throw error;
    // A 4xx: the provider will not take these pieces as they are.
    await ctx.fail(pieces, `the provider refused to add the piece: ${error.message}`);
    await records.closeCall(call.id, ctx.o.clock.now());
    return;
  }
  if (sent !== null) await records.setCallStatus(call.id, sent.statusUrl, sent.txHash);
}

export async function pollAdds(
  ctx: StepContext,
  dataSet: HandoffDataSet,
  listing: DataSetListing,
): Promise<void> {
  const { records, provider, clock } = ctx.o;
  for (const call of await records.openCalls("add")) {
    const body = JSON.parse(call.body) as AddBody;
    const pieces = await records.piecesOfCall(call.id);
    if (call.reconcileUntil !== null) {
      await reconcile(ctx, call, pieces, listing);
      continue;
    }
    if (call.statusUrl === null) {
      // Sent before a restart, answer unknown: the same body again (its nonce adds at most once).
      await sendAdd(ctx, call, body, pieces);
      continue;
    }
    const status = await provider.addStatus(call.statusUrl);
    ctx.answered();
    if (status.state === "pending") continue;
    if (status.state === "rejected") {
      await records.updateCall(call.id, {
        refusals: call.refusals + 1,
        reconcileUntil: clock.now() + ctx.o.reconcileMs,
      });
      continue;
    }
    const now = clock.now();
    for (const [index, pieceCid] of body.pieceCids.entries()) {
      const piece = pieces.find((p) => p.pieceCidV2 === pieceCid);
      if (!piece) continue;
      await records.move([piece.cid], {
        from: ["adding"],
        to: "live",
        at: now,
        callId: null,
        dataSetId: dataSet.dataSetId,
        pieceId: status.pieceIds[index] ?? null,
        txHash: status.txHash,
        error: null,
      });
    }
    await records.closeCall(call.id, now);
  }
}

async function reconcile(
  ctx: StepContext,
  call: HandoffCall,
  pieces: HandoffPiece[],
  listing: DataSetListing,
) {
  const { records, clock } = ctx.o;
  const held = await listing.pieces();
  const now = clock.now();
  let left = 0;
  for (const piece of pieces) {
    const found = held.filter((h) => h.pieceCid === piece.pieceCidV2).at(-1);
    if (found === undefined) {
      left++;
      continue;
    }
    await records.move([piece.cid], {
      from: ["adding"],
      to: "live",
      at: now,
      callId: null,
      dataSetId: listing.dataSetId,
      pieceId: found.pieceId,
      txHash: call.txHash,
      error: null,
    });
  }
  if (left === 0 || now >= call.reconcileUntil!) {
    // Closing the call frees what is left to be added under a new nonce.
    await records.closeCall(call.id, now);
  }
}

export async function startRemovals(ctx: StepContext, dataSet: HandoffDataSet): Promise<void> {
  const { records, payer, clock } = ctx.o;
  for (const piece of await records.unkept(clock.now(), REMOVAL_BATCH)) {
    if (piece.pieceId === null || piece.dataSetId === null) continue;
    const extraData = await payer.signRemoval(BigInt(dataSet.clientDataSetId), [piece.pieceId]);
    const body: RemoveBody = { dataSetId: piece.dataSetId, pieceId: piece.pieceId, extraData };
    const call = newCall(ctx.provider, "remove", body, clock.now());
    await records.openCall(call, [piece.cid], "removing");
    await sendRemoval(ctx, call, body, piece);
  }
}

async function sendRemoval(
  ctx: StepContext,
  call: HandoffCall,
  body: RemoveBody,
  piece: HandoffPiece,
): Promise<void> {
  const { records, provider, clock } = ctx.o;
  try {
    const { txHash } = await provider.removePiece(body);
    ctx.answered();
    await records.setCallStatus(call.id, "", txHash);
    await records.move([piece.cid], {
      from: ["removing"],
      to: "removing",
      at: clock.now(),
      txHash,
    });
  } catch (error) {
    if (!(error instanceof ProviderRefused)) throw error;
    ctx.answered();
    // 404: the provider holds no such piece any more; anything else is said and left to the poll.
    if (error.status === 404) await removed(ctx, call, piece);
    else {
      ctx.o.logger.warn("the provider refused a removal", {
        piece: piece.cid,
        error: error.message,
      });
    }
  }
}

export async function pollRemovals(ctx: StepContext, listing: DataSetListing): Promise<void> {
  const { records } = ctx.o;
  for (const call of await records.openCalls("remove")) {
    const [piece] = await records.piecesOfCall(call.id);
    const body = JSON.parse(call.body) as RemoveBody;
    if (!piece) {
      await records.closeCall(call.id, ctx.o.clock.now());
      continue;
    }
    if (call.statusUrl === null) {
      await sendRemoval(ctx, call, body, piece);
      continue;
    }
    const held = await listing.pieces();
    if (!held.some((h) => h.pieceId === body.pieceId)) await removed(ctx, call, piece);
  }
}

async function removed(ctx: StepContext, call: HandoffCall, piece: HandoffPiece): Promise<void> {
  const now = ctx.o.clock.now();
  await ctx.o.records.move([piece.cid], {
    from: ["removing"],
    to: "removed",
    at: now,
    callId: null,
  });
  await ctx.o.records.closeCall(call.id, now);
}
