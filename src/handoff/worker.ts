/**
 * The hand-off worker: moves every piece an active deal keeps to the PDP
 * provider and back out when no deal keeps it (docs/handoff.md draws the
 * states). One run (a job of the server's list, server/jobs.ts):
 *
 *   queue → data set (created once) → pulls (sent, re-sent with the same
 *   body until each piece's own status settles) → adds (≤ 40 pieces a call,
 *   polled at their Location until the chain confirms) → removals.
 *
 * Every call is recorded with its body before it is sent and every answer
 * before it is acted on (domain/handoff_records.ts), so a kill at any point
 * resumes where the hand-off stood. An add is the one step that spends
 * money twice if repeated: its nonce is signed in, so re-sending the same
 * body can never add twice (the contract refuses a used nonce); and when an
 * add's outcome is in doubt (refused, rejected), its pieces are looked for
 * in the data set for `reconcileMs` before they are added again under a new
 * nonce.
 *
 * The provider answering 429/5xx, timing out or being unreachable stops the
 * run and backs off (Retry-After when given, else doubling up to a minute);
 * nothing here blocks an upload or a read. Scaled out, one instance at a
 * time runs (`turn`: a database lock).
 */
import type {
  HandoffCall,
  HandoffDataSet,
  HandoffPiece,
  HandoffRecords,
} from "../domain/handoff_records.ts";
import type { SweepTurn } from "../domain/locks.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import type { Payer } from "./payer.ts";
import { randomUint256 } from "./payer.ts";
import {
  type PdpProvider,
  ProviderRefused,
  ProviderUnavailable,
  type PullBody,
  type PullStatus,
} from "./pdp_provider.ts";

/** Pieces in one pull: Curio lets one client hold 10 pending pieces while others wait. */
const PULL_BATCH = 10;
/** Pulls open at once. */
const MAX_OPEN_PULLS = 4;
/** Pieces in one AddPieces call (the Warm Storage rule). */
const ADD_BATCH = 40;
/** Removals started per run. */
const REMOVAL_BATCH = 40;
/** How often the whole catalog is scanned for kept pieces not queued (commits queue their own). */
const SCAN_EVERY_MS = 60_000;
const SCAN_LIMIT = 10_000;
/** A create or an add refused this often starts over (a new clientDataSetId, a new nonce). */
const MAX_REFUSALS = 3;
const MAX_BACKOFF_MS = 60_000;

/** Curio names no reason in a pull answer; this is what is known. */
export const PULL_FAILED = "the provider could not take the piece";

export interface HandoffWorkerOptions {
  records: HandoffRecords;
  provider: PdpProvider;
  payer: Payer;
  recordKeeper: string;
  /** The service's public base URL: the provider pulls <baseUrl>/piece/<PieceCIDv2>. */
  baseUrl: string;
  clock: Clock;
  logger: Logger;
  turn: SweepTurn;
  /** How long an add in doubt is looked for in the data set before it is sent again. */
  reconcileMs: number;
}

export class HandoffWorker {
  readonly #o: HandoffWorkerOptions;
  #backoffUntil = 0;
  #failures = 0;
  #lastScan = -Infinity;
  /** The last provider failure, for /healthz (null once it answers again). */
  #lastProblem: string | null = null;
  #lastAnswerAt: number | null = null;
  /** Resolved at the end of each run: waiters (--handoff-wait) look again then. */
  #ran = Promise.withResolvers<void>();

  constructor(options: HandoffWorkerOptions) {
    this.#o = options;
  }

  get provider(): string {
    return this.#o.provider.url;
  }

  /** How the provider did last: for /healthz. */
  status(): { answering: boolean; lastAnswerAt: number | null; problem: string | null } {
    return {
      answering: this.#lastProblem === null && this.#lastAnswerAt !== null,
      lastAnswerAt: this.#lastAnswerAt,
      problem: this.#lastProblem,
    };
  }

  /** Resolves after the next run ends. */
  nextRun(): Promise<void> {
    return this.#ran.promise;
  }

  /** Queues just-committed pieces (the commit hook); never throws. */
  async enqueue(cids: readonly string[]): Promise<void> {
    try {
      await this.#o.records.enqueue({
        provider: this.provider,
        now: this.#o.clock.now(),
        cids,
        limit: cids.length,
      });
    } catch (error) {
      // The next scan queues it.
      this.#o.logger.warn("cannot queue a piece for the hand-off", { error: String(error) });
    }
  }

  /** One run of the job. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      if (this.#o.clock.now() < this.#backoffUntil) return;
      await this.#o.turn.tryRun(async (turnLost) => {
        const stop = AbortSignal.any([signal, turnLost]);
        await this.#work(stop);
      });
      this.#failures = 0;
      this.#lastProblem = null;
    } catch (error) {
      if (!(error instanceof ProviderUnavailable)) throw error;
      this.#failures++;
      const doubling = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(this.#failures - 1, 6));
      this.#backoffUntil = this.#o.clock.now() + (error.retryAfterMs ?? doubling);
      this.#lastProblem = error.message;
      this.#o.logger.warn("the storage provider did not answer; backing off", {
        provider: this.provider,
        error: error.message,
        retryInMs: this.#backoffUntil - this.#o.clock.now(),
      });
    } finally {
      const ran = this.#ran;
      this.#ran = Promise.withResolvers<void>();
      ran.resolve();
    }
  }

  async #work(signal: AbortSignal): Promise<void> {
    const { records, clock } = this.#o;
    if (clock.now() - this.#lastScan >= SCAN_EVERY_MS) {
      await records.enqueue({ provider: this.provider, now: clock.now(), limit: SCAN_LIMIT });
      this.#lastScan = clock.now();
    }
    const dataSet = await this.#dataSet();
    if (dataSet === null || signal.aborted) return;
    const listing = new DataSetListing(this.#o.provider, dataSet.dataSetId!);
    await this.#pollPulls(dataSet);
    if (!signal.aborted) await this.#startPulls(dataSet);
    if (!signal.aborted) await this.#pollAdds(dataSet, listing);
    if (!signal.aborted) await this.#startAdds(dataSet);
    if (!signal.aborted) await this.#pollRemovals(listing);
    if (!signal.aborted) await this.#startRemovals(dataSet);
  }

  #answered(): void {
    this.#lastAnswerAt = this.#o.clock.now();
  }

  // The data set: created once per provider.

  async #dataSet(): Promise<HandoffDataSet | null> {
    const { records, provider, payer, recordKeeper, clock } = this.#o;
    let dataSet = await records.dataSet(this.provider);
    if (dataSet?.dataSetId != null) return dataSet;
    const open = (await records.openCalls("create")).find((c) => c.id === dataSet?.callId);
    let call: HandoffCall;
    if (dataSet === null || open === undefined) {
      const clientDataSetId = randomUint256();
      const extraData = await payer.signCreateDataSet(clientDataSetId);
      call = newCall(this.provider, "create", { recordKeeper, extraData }, clock.now());
      await records.openCall(call, [], "queued");
      dataSet = {
        provider: this.provider,
        clientDataSetId: clientDataSetId.toString(),
        dataSetId: null,
        callId: call.id,
      };
      await records.saveDataSet(dataSet);
      this.#o.logger.info("creating the service's data set at the provider", {
        provider: this.provider,
        payer: payer.payer,
      });
    } else {
      call = open;
    }
    if (call.statusUrl === null) {
      const body = JSON.parse(call.body) as { recordKeeper: string; extraData: string };
      const sent = await this.#refusable(call, () => provider.createDataSet(body));
      if (sent === null) {
        if (call.refusals + 1 >= MAX_REFUSALS) await this.#restartDataSet(dataSet, call);
        return null;
      }
      await records.setCallStatus(call.id, sent.statusUrl, sent.txHash);
      call = { ...call, ...sent };
    }
    const status = await provider.creationStatus(call.statusUrl!);
    this.#answered();
    if (status.state === "pending") return null;
    if (status.state === "rejected") {
      this.#o.logger.warn("the chain rejected the data set's creation; starting over", {
        provider: this.provider,
      });
      await this.#restartDataSet(dataSet, call);
      return null;
    }
    await records.closeCall(call.id, clock.now());
    const created = { ...dataSet, dataSetId: status.dataSetId, callId: null };
    await records.saveDataSet(created);
    this.#o.logger.info("the service's data set is created", {
      provider: this.provider,
      dataSetId: status.dataSetId,
    });
    return created;
  }

  async #restartDataSet(dataSet: HandoffDataSet, call: HandoffCall): Promise<void> {
    await this.#o.records.closeCall(call.id, this.#o.clock.now());
    await this.#o.records.saveDataSet({ ...dataSet, callId: null });
  }

  // Pulls: the provider fetches each piece from /piece/ and checks it.

  async #startPulls(dataSet: HandoffDataSet): Promise<void> {
    const { records, payer, recordKeeper, baseUrl, clock } = this.#o;
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
      const call = newCall(this.provider, "pull", body, clock.now());
      await records.openCall(call, pieces.map((p) => p.cid), "pulling");
      open++;
      await this.#sendPull(call, body);
    }
  }

  async #pollPulls(_dataSet: HandoffDataSet): Promise<void> {
    for (const call of await this.#o.records.openCalls("pull")) {
      await this.#sendPull(call, JSON.parse(call.body) as PullBody);
    }
  }

  /** Sends a pull (again: the provider answers the same pull) and settles each piece by its own status. */
  async #sendPull(call: HandoffCall, body: PullBody): Promise<void> {
    const { records, provider, clock } = this.#o;
    const pieces = await records.piecesOfCall(call.id);
    let statuses: { pieceCid: string; status: PullStatus }[];
    try {
      statuses = await provider.pull(body);
    } catch (error) {
      if (!(error instanceof ProviderRefused)) throw error;
      this.#answered();
      await this.#fail(pieces, `the provider refused the pull: ${error.message}`);
      await records.closeCall(call.id, clock.now());
      return;
    }
    this.#answered();
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
    await this.#fail(failed, PULL_FAILED);
    if (complete.length + failed.length === pieces.length) await records.closeCall(call.id, now);
  }

  async #fail(pieces: readonly HandoffPiece[], error: string): Promise<void> {
    if (pieces.length === 0) return;
    await this.#o.records.move(pieces.map((p) => p.cid), {
      from: ["pulling", "adding"],
      to: "failed",
      at: this.#o.clock.now(),
      callId: null,
      error,
    });
    this.#o.logger.warn("the storage provider did not take pieces", {
      provider: this.provider,
      pieces: pieces.map((p) => p.cid).join(" "),
      error,
    });
  }

  // Adds: pulled pieces into the data set, on chain.

  async #startAdds(dataSet: HandoffDataSet): Promise<void> {
    const { records, payer, clock } = this.#o;
    const pieces = await records.idle("adding", ADD_BATCH);
    if (pieces.length === 0) return;
    const pieceCids = pieces.map((p) => p.pieceCidV2!);
    const extraData = await payer.signAddPieces(
      BigInt(dataSet.clientDataSetId),
      pieceCids,
      randomUint256(),
    );
    const body: AddBody = { dataSetId: dataSet.dataSetId!, pieceCids, extraData };
    const call = newCall(this.provider, "add", body, clock.now());
    await records.openCall(call, pieces.map((p) => p.cid), "adding");
    await this.#sendAdd(call, body, pieces);
  }

  async #sendAdd(call: HandoffCall, body: AddBody, pieces: HandoffPiece[]): Promise<void> {
    const { records, provider } = this.#o;
    let sent: { statusUrl: string; txHash: string } | null;
    try {
      sent = await this.#refusable(call, () => provider.addPieces(body));
    } catch (error) {
      if (!(error instanceof ProviderRefused)) throw error;
      // A 4xx: the provider will not take these pieces as they are.
      await this.#fail(pieces, `the provider refused to add the piece: ${error.message}`);
      await records.closeCall(call.id, this.#o.clock.now());
      return;
    }
    if (sent !== null) await records.setCallStatus(call.id, sent.statusUrl, sent.txHash);
  }

  async #pollAdds(dataSet: HandoffDataSet, listing: DataSetListing): Promise<void> {
    const { records, provider, clock } = this.#o;
    for (const call of await records.openCalls("add")) {
      const body = JSON.parse(call.body) as AddBody;
      const pieces = await records.piecesOfCall(call.id);
      if (call.reconcileUntil !== null) {
        await this.#reconcile(call, pieces, listing);
        continue;
      }
      if (call.statusUrl === null) {
        // Sent before a restart, answer unknown: the same body again (its nonce adds at most once).
        await this.#sendAdd(call, body, pieces);
        continue;
      }
      const status = await provider.addStatus(call.statusUrl);
      this.#answered();
      if (status.state === "pending") continue;
      if (status.state === "rejected") {
        await records.updateCall(call.id, {
          refusals: call.refusals + 1,
          reconcileUntil: clock.now() + this.#o.reconcileMs,
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

  /** An add in doubt: its pieces found in the data set are live; the rest go again after the window. */
  async #reconcile(call: HandoffCall, pieces: HandoffPiece[], listing: DataSetListing) {
    const { records, clock } = this.#o;
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

  // Removals: no active deal keeps a live piece, so the payer stops paying for it.

  async #startRemovals(dataSet: HandoffDataSet): Promise<void> {
    const { records, payer, clock } = this.#o;
    for (const piece of await records.unkept(clock.now(), REMOVAL_BATCH)) {
      if (piece.pieceId === null || piece.dataSetId === null) continue;
      const extraData = await payer.signRemoval(BigInt(dataSet.clientDataSetId), [piece.pieceId]);
      const body: RemoveBody = { dataSetId: piece.dataSetId, pieceId: piece.pieceId, extraData };
      const call = newCall(this.provider, "remove", body, clock.now());
      await records.openCall(call, [piece.cid], "removing");
      await this.#sendRemoval(call, body, piece);
    }
  }

  async #sendRemoval(call: HandoffCall, body: RemoveBody, piece: HandoffPiece): Promise<void> {
    const { records, provider, clock } = this.#o;
    try {
      const { txHash } = await provider.removePiece(body);
      this.#answered();
      await records.setCallStatus(call.id, "", txHash);
      await records.move([piece.cid], {
        from: ["removing"],
        to: "removing",
        at: clock.now(),
        txHash,
      });
    } catch (error) {
      if (!(error instanceof ProviderRefused)) throw error;
      this.#answered();
      // 404: the provider holds no such piece any more; anything else is said and left to the poll.
      if (error.status === 404) await this.#removed(call, piece);
      else {
        this.#o.logger.warn("the provider refused a removal", {
          piece: piece.cid,
          error: error.message,
        });
      }
    }
  }

  async #pollRemovals(listing: DataSetListing): Promise<void> {
    const { records } = this.#o;
    for (const call of await records.openCalls("remove")) {
      const [piece] = await records.piecesOfCall(call.id);
      const body = JSON.parse(call.body) as RemoveBody;
      if (!piece) {
        await records.closeCall(call.id, this.#o.clock.now());
        continue;
      }
      if (call.statusUrl === null) {
        await this.#sendRemoval(call, body, piece);
        continue;
      }
      const held = await listing.pieces();
      if (!held.some((h) => h.pieceId === body.pieceId)) await this.#removed(call, piece);
    }
  }

  async #removed(call: HandoffCall, piece: HandoffPiece): Promise<void> {
    const now = this.#o.clock.now();
    await this.#o.records.move([piece.cid], {
      from: ["removing"],
      to: "removed",
      at: now,
      callId: null,
    });
    await this.#o.records.closeCall(call.id, now);
  }

  /**
   * Sends a create or an add. A refusal the chain gives (a 5xx: Curio could not
   * estimate the gas) is counted on the call; past MAX_REFUSALS the call is put
   * in doubt and reconciled; below it, the run backs off and sends it again.
   * Returns null when the call was refused.
   */
  async #refusable<T>(call: HandoffCall, send: () => Promise<T>): Promise<T | null> {
    try {
      const answer = await send();
      this.#answered();
      return answer;
    } catch (error) {
      if (
        !(error instanceof ProviderUnavailable) || error.status === null || error.status === 429
      ) {
        throw error;
      }
      this.#answered();
      const refusals = call.refusals + 1;
      const inDoubt = refusals >= MAX_REFUSALS && call.kind === "add";
      await this.#o.records.updateCall(call.id, {
        refusals,
        reconcileUntil: inDoubt ? this.#o.clock.now() + this.#o.reconcileMs : null,
      });
      if (refusals >= MAX_REFUSALS) {
        this.#o.logger.warn("the provider refused a call repeatedly", {
          kind: call.kind,
          error: error.message,
        });
        return null;
      }
      throw error;
    }
  }
}

interface AddBody {
  dataSetId: number;
  pieceCids: string[];
  extraData: string;
}

interface RemoveBody {
  dataSetId: number;
  pieceId: number;
  extraData: string;
}

function newCall(
  provider: string,
  kind: HandoffCall["kind"],
  body: unknown,
  at: number,
): HandoffCall {
  return {
    id: crypto.randomUUID(),
    provider,
    kind,
    body: JSON.stringify(body),
    statusUrl: null,
    txHash: null,
    refusals: 0,
    reconcileUntil: null,
    openedAt: at,
  };
}

/** The data set's pieces, read from the provider at most once per run. */
class DataSetListing {
  readonly #provider: PdpProvider;
  readonly dataSetId: number;
  #pieces: Promise<{ pieceId: number; pieceCid: string }[]> | null = null;

  constructor(provider: PdpProvider, dataSetId: number) {
    this.#provider = provider;
    this.dataSetId = dataSetId;
  }

  pieces(): Promise<{ pieceId: number; pieceCid: string }[]> {
    this.#pieces ??= this.#provider.dataSetPieces(this.dataSetId);
    return this.#pieces;
  }
}
