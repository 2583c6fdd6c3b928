/**
 * The upload pipeline, as the endpoints that store bytes in one request see
 * it: the intake (intake.ts) lets a request through with a ticket; then
 * POST /api/upload's body is staged with its checks (staging.ts) and
 * committed, or POST /api/deals's deal on bytes stored already is made; both
 * through commit.ts, whose `onCommitted` hears of every deal. The resumable
 * uploads (resumable.ts) take the same intake and the same commit over many
 * requests.
 *
 * What it answers is the deal and the caller's daily cap after it; the
 * adapters (http/upload/) turn that into the upload result (terms.ts:
 * uploadResultOf) and its RateLimit fields.
 */
import type { DealRecord } from "../domain/catalog_records.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { CapStatus } from "../domain/cap_ledger.ts";
import type { UploadCommits } from "./commit.ts";
import { UploadIntake } from "./intake.ts";
import type { BytesTicket, IntakeDeps, UploadTicket } from "./intake.ts";
import { stageChecked } from "./staging.ts";
import { type Handoff, viewOf } from "../handoff/service.ts";
import type { HandoffView } from "../kernel/wire.ts";
import { ApiError } from "../kernel/errors.ts";
import type { BodyReading } from "./staging.ts";

export interface UploadPipelineOptions extends IntakeDeps {
  store: PieceStore;
  /** Workers for piece-cid verification; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  commits: UploadCommits;
  /** The hand-off to a storage provider; null with --handoff off. */
  handoff: Handoff | null;
}

/** A deal made: what the adapters answer. */
export interface Committed {
  deal: DealRecord;
  /** Where its piece stands with the storage provider (with a hand-off; else absent). */
  handoff?: HandoffView | null;
  /** A CAR upload's roots; null for any other. */
  roots: string[] | null;
  /** The caller's daily cap now the deal's bytes are counted (the commit settled the reservation). */
  capStatus: CapStatus;
}

export class UploadPipeline {
  readonly intake: UploadIntake;
  readonly #options: UploadPipelineOptions;

  constructor(options: UploadPipelineOptions) {
    this.#options = options;
    this.intake = new UploadIntake(options);
  }

  /**
   * Stages a body of one request with its checks (400 on a failed one, nothing
   * stored) and commits its deal; lets go of the ticket however it ends.
   */
  async storeBody(
    ticket: BytesTicket,
    body: ReadableStream<Uint8Array> | null,
    reading: BodyReading,
  ): Promise<Committed> {
    try {
      const checked = await stageChecked(this.#options, body, reading, {
        cid: ticket.cid.cid,
        parsedCid: ticket.cid.parsed,
        length: ticket.size,
        contentType: ticket.contentType,
        maxCarBlocks: ticket.policy.carMaxBlocks,
      });
      ticket.logFields.verified = checked.verified;
      // A token revoked (or expired) while the body came makes no deal; nothing is charged.
      await reading.callerStillValid().catch(async (error) => {
        await checked.staged.discard().catch(() => {});
        throw error;
      });
      const deal = await this.#options.commits.upload({
        ...ticket.deal,
        staged: checked.staged,
        contentType: ticket.contentType,
        filename: ticket.filename,
        cidVerified: checked.verified,
        blocks: checked.blocks,
      }, "upload");
      return await this.#committed(ticket, deal, checked.roots);
    } finally {
      await ticket.release();
    }
  }

  /** A deal on the ticket's piece, stored already (404 if it is gone meanwhile). */
  async makeDeal(ticket: UploadTicket): Promise<Committed> {
    try {
      const deal = await this.#options.commits.deal(ticket.deal);
      return await this.#committed(ticket, deal, null);
    } finally {
      await ticket.release();
    }
  }

  async #committed(
    ticket: UploadTicket,
    deal: DealRecord,
    roots: string[] | null,
  ): Promise<Committed> {
    const { usageSubject, dailyCapBytes } = ticket.policy;
    const handoff = await this.#handedOff(ticket, deal);
    return {
      deal,
      roots,
      capStatus: await this.#options.ledger.status(usageSubject, dailyCapBytes),
      ...(handoff === undefined ? {} : { handoff }),
    };
  }

  /**
   * With a hand-off: the piece's state, after waiting (--handoff-wait) for the
   * provider to hold it. A refusal takes the deal back (nothing charged, no
   * deal) and answers 502 stage_failed with what is known of why.
   */
  async #handedOff(
    ticket: UploadTicket,
    deal: DealRecord,
  ): Promise<HandoffView | null | undefined> {
    const { handoff, commits } = this.#options;
    if (handoff === null) return undefined;
    if (handoff.waitSeconds === 0) return await handoff.viewOf(deal.cid);
    const piece = await handoff.waitFor(deal.cid, handoff.waitSeconds * 1000);
    if (piece?.state !== "failed") return piece === null ? null : viewOf(piece);
    await commits.withdraw(deal, {
      subject: ticket.policy.usageSubject,
      day: ticket.deal.usageDay,
    });
    handoff.logRefused(deal.cid, piece.error);
    throw new ApiError(
      "stage_failed",
      `The storage provider refused the piece (${piece.error ?? "no reason given"}); ` +
        "nothing was stored or charged",
    );
  }
}
