/**
 * The service's data set at the provider, created once (POST /pdp/data-sets,
 * polled at its Location until the chain has it): a single-use
 * clientDataSetId, signed CreateDataSet, recorded before it is sent. A
 * creation the chain rejects, or refused past its last try, starts over
 * under a new clientDataSetId.
 */
import type { HandoffCall, HandoffDataSet } from "../domain/handoff_records.ts";
import { MAX_REFUSALS, newCall, type StepContext } from "./context.ts";
import { randomUint256 } from "./payer.ts";

/** The data set once created; null while its creation is under way. */
export async function ensureDataSet(ctx: StepContext): Promise<HandoffDataSet | null> {
  const { records, provider, payer, recordKeeper, clock } = ctx.o;
  let dataSet = await records.dataSet(ctx.provider);
  if (dataSet?.dataSetId != null) return dataSet;
  const open = (await records.openCalls("create")).find((c) => c.id === dataSet?.callId);
  let call: HandoffCall;
  if (dataSet === null || open === undefined) {
    const clientDataSetId = randomUint256();
    const extraData = await payer.signCreateDataSet(clientDataSetId);
    call = newCall(ctx.provider, "create", { recordKeeper, extraData }, clock.now());
    await records.openCall(call, [], "queued");
    dataSet = {
      provider: ctx.provider,
      clientDataSetId: clientDataSetId.toString(),
      dataSetId: null,
      callId: call.id,
    };
    await records.saveDataSet(dataSet);
    ctx.o.logger.info("creating the service's data set at the provider", {
      provider: ctx.provider,
      payer: payer.payer,
    });
  } else {
    call = open;
  }
  if (call.statusUrl === null) {
    const body = JSON.parse(call.body) as { recordKeeper: string; extraData: string };
    const sent = await ctx.refusable(call, () => provider.createDataSet(body));
    if (sent === null) {
      if (call.refusals + 1 >= MAX_REFUSALS) await restartDataSet(ctx, dataSet, call);
      return null;
    }
    await records.setCallStatus(call.id, sent.statusUrl, sent.txHash);
    call = { ...call, ...sent };
  }
  const status = await provider.creationStatus(call.statusUrl!);
  ctx.answered();
  if (status.state === "pending") return null;
  if (status.state === "rejected") {
    ctx.o.logger.warn("the chain rejected the data set's creation; starting over", {
      provider: ctx.provider,
    });
    await restartDataSet(ctx, dataSet, call);
    return null;
  }
  await records.closeCall(call.id, clock.now());
  const created = { ...dataSet, dataSetId: status.dataSetId, callId: null };
  await records.saveDataSet(created);
  ctx.o.logger.info("the service's data set is created", {
    provider: ctx.provider,
    dataSetId: status.dataSetId,
  });
  return created;
}

async function restartDataSet(
  ctx: StepContext,
  dataSet: HandoffDataSet,
  call: HandoffCall,
): Promise<void> {
  await ctx.o.records.closeCall(call.id, ctx.o.clock.now());
  await ctx.o.records.saveDataSet({ ...dataSet, callId: null });
}
