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
import type { HandoffCall, HandoffPiece, HandoffRecords } from "../domain/handoff_records.ts";
import {
  DataSetListing,
  type HandoffWorkerOptions,
  MAX_REFUSALS,
  type StepContext,
} from "./context.ts";
import { ensureDataSet } from "./data_set_step.ts";
import {
  pollAdds,
  pollPulls,
  pollRemovals,
  startAdds,
  startPulls,
  startRemovals,
} from "./piece_steps.ts";
import { ProviderUnavailable } from "./pdp_provider.ts";

export type { HandoffWorkerOptions } from "./context.ts";

/** How long one run may go on while every round moves pieces. */
const DRAIN_MS = 20_000;
/** The pause between two rounds of one run: a poll of each open call per round. */
const ROUND_PAUSE_MS = 200;

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** How often the whole catalog is scanned for kept pieces not queued (commits queue their own). */
const SCAN_EVERY_MS = 60_000;
const SCAN_LIMIT = 10_000;
const MAX_BACKOFF_MS = 60_000;

export class HandoffWorker implements StepContext {
  readonly o: HandoffWorkerOptions;
  #backoffUntil = 0;
  #failures = 0;
  /** The data set once known (null before): a run without one checks whether it needs one. */
  #dataSetId: number | null = null;
  /** Pieces moved and calls opened in the current round. */
  #progress = 0;
  #lastScan = -Infinity;
  /** The last provider failure, for /healthz (null once it answers again). */
  #lastProblem: string | null = null;
  #lastAnswerAt: number | null = null;
  /** Resolved at the end of each run: waiters (--handoff-wait) look again then. */
  #ran = Promise.withResolvers<void>();

  constructor(options: HandoffWorkerOptions) {
    // Every write a step makes counts as progress: a run goes on while there is some.
    const counted = (n: number) => this.#progress += n;
    const records = new Proxy(options.records, {
      get(target, name) {
        if (name === "move") {
          return async (...args: Parameters<HandoffRecords["move"]>) => {
            const moved = await target.move(...args);
            counted(moved);
            return moved;
          };
        }
        if (name === "openCall") {
          return async (...args: Parameters<HandoffRecords["openCall"]>) => {
            await target.openCall(...args);
            counted(1);
          };
        }
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    this.o = { ...options, records };
  }

  get provider(): string {
    return this.o.provider.url;
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
      await this.o.records.enqueue({
        provider: this.provider,
        now: this.o.clock.now(),
        cids,
        limit: cids.length,
      });
    } catch (error) {
      // The next scan queues it.
      this.o.logger.warn("cannot queue a piece for the hand-off", { error: String(error) });
    }
  }

  /** One run of the job. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      if (this.o.clock.now() < this.#backoffUntil) return;
      await this.o.turn.tryRun(async (turnLost) => {
        const stop = AbortSignal.any([signal, turnLost]);
        // Rounds follow each other while they move pieces (a backlog drains at the provider's
        // pace, not the job's interval), a short pause apart, for at most DRAIN_MS.
        const until = this.o.clock.now() + DRAIN_MS;
        while (true) {
          this.#progress = 0;
          await this.#work(stop);
          if (this.#progress === 0 || stop.aborted || this.o.clock.now() >= until) break;
          await pause(ROUND_PAUSE_MS, stop);
        }
      });
      this.#failures = 0;
      this.#lastProblem = null;
    } catch (error) {
      if (!(error instanceof ProviderUnavailable)) throw error;
      this.#failures++;
      const doubling = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(this.#failures - 1, 6));
      this.#backoffUntil = this.o.clock.now() + (error.retryAfterMs ?? doubling);
      this.#lastProblem = error.message;
      this.o.logger.warn("the storage provider did not answer; backing off", {
        provider: this.provider,
        error: error.message,
        retryInMs: this.#backoffUntil - this.o.clock.now(),
      });
    } finally {
      const ran = this.#ran;
      this.#ran = Promise.withResolvers<void>();
      ran.resolve();
    }
  }

  async #work(signal: AbortSignal): Promise<void> {
    const { records, clock } = this.o;
    if (clock.now() - this.#lastScan >= SCAN_EVERY_MS) {
      await records.enqueue({ provider: this.provider, now: clock.now(), limit: SCAN_LIMIT });
      this.#lastScan = clock.now();
    }
    // The data set is created for the first piece, not at the first start: it costs the payer.
    if (this.#dataSetId === null && (await records.readyToPull(1)).length === 0) {
      const known = await records.dataSet(this.provider);
      if (known?.dataSetId == null && known?.callId == null) return;
    }
    const dataSet = await ensureDataSet(this);
    this.#dataSetId = dataSet?.dataSetId ?? null;
    if (dataSet === null || signal.aborted) return;
    const listing = new DataSetListing(this.o.provider, dataSet.dataSetId!);
    await pollPulls(this);
    if (!signal.aborted) await startPulls(this, dataSet);
    if (!signal.aborted) await pollAdds(this, dataSet, listing);
    if (!signal.aborted) await startAdds(this, dataSet);
    if (!signal.aborted) await pollRemovals(this, listing);
    if (!signal.aborted) await startRemovals(this, dataSet);
  }

  answered(): void {
    this.#lastAnswerAt = this.o.clock.now();
  }

  // The data set: created once per provider.

  async fail(pieces: readonly HandoffPiece[], error: string): Promise<void> {
    if (pieces.length === 0) return;
    await this.o.records.move(pieces.map((p) => p.cid), {
      from: ["pulling", "adding"],
      to: "failed",
      at: this.o.clock.now(),
      callId: null,
      error,
    });
    this.o.logger.warn("the storage provider did not take pieces", {
      provider: this.provider,
      pieces: pieces.map((p) => p.cid).join(" "),
      error,
    });
  }

  async refusable<T>(call: HandoffCall, send: () => Promise<T>): Promise<T | null> {
    try {
      const answer = await send();
      this.answered();
      return answer;
    } catch (error) {
      if (
        !(error instanceof ProviderUnavailable) || error.status === null || error.status === 429
      ) {
        throw error;
      }
      this.answered();
      const refusals = call.refusals + 1;
      const inDoubt = refusals >= MAX_REFUSALS && call.kind === "add";
      await this.o.records.updateCall(call.id, {
        refusals,
        reconcileUntil: inDoubt ? this.o.clock.now() + this.o.reconcileMs : null,
      });
      if (refusals >= MAX_REFUSALS) {
        this.o.logger.warn("the provider refused a call repeatedly", {
          kind: call.kind,
          error: error.message,
        });
        return null;
      }
      throw error;
    }
  }
}
