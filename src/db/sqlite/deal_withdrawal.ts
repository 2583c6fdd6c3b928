/**
 * Taking back a deal just made (CatalogRecords.withdrawDeal: an upload the
 * storage provider refused under --handoff-wait): the deal and the usage it
 * counted go, and the piece is marked as being removed when nothing else
 * keeps it, in one transaction.
 */
import type { StatementSync } from "node:sqlite";
import { transaction } from "./database.ts";
import type { Database } from "./database.ts";
import type { RemovalMarkOf, WithdrawDealInput } from "../../domain/catalog_records.ts";

export class DealWithdrawalStatements {
  readonly #db: Database;
  readonly #deal: StatementSync;
  readonly #usage: StatementSync;
  readonly #unwanted: StatementSync;
  readonly #blocks: StatementSync;

  constructor(db: Database) {
    this.#db = db;
    this.#deal = db.prepare(`DELETE FROM deals WHERE id = ?`);
    this.#usage = db.prepare(
      `UPDATE usage_daily SET bytes = MAX(0, bytes - ?), uploads = MAX(0, uploads - 1)
       WHERE subject = ? AND day = ?`,
    );
    this.#unwanted = db.prepare(
      `INSERT INTO removed_pieces (cid, removing_at)
       SELECT p.cid, $at FROM pieces p WHERE p.cid = $cid
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
         AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid)
         AND NOT EXISTS (SELECT 1 FROM manifest_pieces m WHERE m.piece_cid = p.cid)
       RETURNING mark`,
    );
    // A block lives while its piece does (as a sweep's removal forgets them).
    this.#blocks = db.prepare(`DELETE FROM blocks WHERE piece_cid = ?`);
  }

  withdraw(input: WithdrawDealInput): RemovalMarkOf | null {
    return transaction(this.#db, () => {
      if (Number(this.#deal.run(input.dealId).changes) !== 1) return null;
      const { subject, day, bytes } = input.usage;
      this.#usage.run(bytes, subject, day);
      const row = this.#unwanted.get({ cid: input.cid, at: input.at }) as
        | { mark: number }
        | undefined;
      if (!row) return null;
      this.#blocks.run(input.cid);
      return { mark: Number(row.mark), cid: input.cid };
    });
  }
}
