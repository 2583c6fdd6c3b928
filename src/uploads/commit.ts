/**
 * The commit of every way of storing bytes, and the one place to hook in
 * after it. POST /api/upload (pipeline.ts), the last byte of a resumable
 * upload (resumable.ts) and POST /api/deals (pipeline.ts) all make their deal
 * here, through the catalog (catalog/catalog.ts: acceptUpload, acceptDeal).
 *
 * After each commit, `onCommitted` hears of the deal made (server/services.ts
 * wires it, once; by default nobody listens). It is where work on committed
 * pieces hooks in (handing each one on to a Filecoin storage provider, say):
 * it runs after the deal is durable and before the client is answered, so it
 * must not block (queue slow work), and what it throws is logged, never
 * answered: the deal stands.
 */
import type { AcceptDealInput, AcceptUploadInput, PieceCatalog } from "../catalog/catalog.ts";
import type { DealRecord, RemovalMarkOf } from "../domain/catalog_records.ts";
import type { Clock } from "../kernel/clock.ts";
import { toRfc3339 } from "../kernel/clock.ts";
import { ApiError } from "../kernel/errors.ts";
import type { Logger } from "../kernel/log.ts";
import { apiErrorOfStoreFailure } from "./store_errors.ts";

/** Which way the deal came: bytes in one request, a resumable upload's last byte, bytes stored already. */
export type CommitPath = "upload" | "resumable" | "deal";

/** What a commit tells its listener: the deal made (its cid and size name the piece), and how. */
export interface UploadCommitted {
  deal: DealRecord;
  via: CommitPath;
}

export interface UploadCommitsOptions {
  catalog: PieceCatalog;
  logger: Logger;
  clock: Clock;
  /** Hears of every deal committed; must not block. Default: nobody listens. */
  onCommitted?: (committed: UploadCommitted) => void;
  /** Hears of a piece removed with a withdrawn deal: finish its removal mark, forget it. */
  onWithdrawn?: (mark: RemovalMarkOf) => Promise<void>;
}

export class UploadCommits {
  readonly #options: UploadCommitsOptions;

  constructor(options: UploadCommitsOptions) {
    this.#options = options;
  }

  /**
   * Commits staged bytes and records their deal (catalog.acceptUpload): the
   * store's failures and a conflict become their API errors.
   */
  async upload(input: AcceptUploadInput, via: "upload" | "resumable"): Promise<DealRecord> {
    const deal = await this.#options.catalog.acceptUpload(input).catch((error) => {
      throw apiErrorOfStoreFailure(error);
    });
    this.#committed({ deal, via });
    return deal;
  }

  /**
   * A deal on bytes stored already (catalog.acceptDeal): 404 when they are not
   * stored (any more), 409 piece_corrupt while a scrub's mark stands.
   */
  async deal(input: AcceptDealInput): Promise<DealRecord> {
    const outcome = await this.#options.catalog.acceptDeal(input);
    if (outcome.kind === "not_stored") throw notStored(input.cid);
    if (outcome.kind === "corrupt") {
      throw new ApiError(
        "piece_corrupt",
        "The stored bytes of this cid failed verification: upload them to repair it",
      );
    }
    this.#committed({ deal: outcome.deal, via: "deal" });
    return outcome.deal;
  }

  /**
   * Takes back a deal just made, as if it had never been made: the deal and
   * the usage it counted go, and its piece too when nothing else keeps it
   * (an upload that waited for the storage provider, which refused the piece:
   * 502 stage_failed, nothing charged).
   */
  async withdraw(
    deal: DealRecord,
    usage: { subject: string; day: string },
  ): Promise<void> {
    const mark = await this.#options.catalog.withdrawDeal({
      dealId: deal.id,
      cid: deal.cid,
      usage: { ...usage, bytes: Number(deal.size) },
      at: toRfc3339(this.#options.clock.now()),
    });
    if (mark !== null) await this.#options.onWithdrawn?.(mark);
  }

  #committed(committed: UploadCommitted): void {
    try {
      this.#options.onCommitted?.(committed);
    } catch (error) {
      this.#options.logger.error("a listener of committed uploads failed", {
        deal: committed.deal.id,
        error: String(error),
      });
    }
  }
}

/** 404 for a deal on a cid nothing is stored under. */
export function notStored(cid: string): ApiError {
  return new ApiError("not_found", `Nothing is stored under ${cid}: upload its bytes instead`);
}
