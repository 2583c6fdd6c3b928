/**
 * What a manifest lists, kept so that its deal keeps those pieces (see
 * LifecycleRecords in domain/lifecycle_records.ts): one row per listed cid, and one naming
 * the manifest itself, which marks the listing as recorded even for bytes
 * typed as a manifest that list nothing readable. Written inside the caller's
 * transaction: an upload's (with its deal) or a sweep's catch-up.
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";

export class ManifestListingStatements {
  readonly #insert: StatementSync;
  readonly #forget: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(
      `INSERT INTO manifest_pieces (manifest_cid, piece_cid) VALUES (?, ?)
       ON CONFLICT DO NOTHING`,
    );
    this.#forget = db.prepare(`DELETE FROM manifest_pieces WHERE manifest_cid = ?`);
  }

  record(manifestCid: string, pieceCids: readonly string[]): void {
    this.#insert.run(manifestCid, manifestCid);
    for (const cid of pieceCids) this.#insert.run(manifestCid, cid);
  }

  /** A removed manifest's listing: its bytes are gone, and new ones are read again. */
  forget(manifestCid: string): void {
    this.#forget.run(manifestCid);
  }
}
