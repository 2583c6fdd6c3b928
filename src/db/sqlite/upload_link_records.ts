// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/**
 * Signed upload links (migration 17): their terms by the hash of their
 * secret. Spending one is one DELETE, so of two uploads racing with the same
 * link only one goes on.
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { UploadLinkRecord, UploadLinkRecords } from "../../domain/auth_records.ts";
import { uploadLinkOf } from "../upload_link_rows.ts";
import type { UploadLinkRow } from "../upload_link_rows.ts";

export class SqliteUploadLinkRecords implements UploadLinkRecords {
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #consume: StatementSync;
  readonly #pruneExpired: StatementSync;

  constructor(db: Database) {
    this.#insert = db.prepare(`INSERT INTO upload_links
      (id_hash, jti, cid, size, content_type, filename, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    this.#get = db.prepare(`SELECT * FROM upload_links WHERE id_hash = ? AND expires_ms > ?`);
    this.#consume = db.prepare(`DELETE FROM upload_links WHERE id_hash = ? AND expires_ms > ?`);
    this.#pruneExpired = db.prepare(`DELETE FROM upload_links WHERE expires_ms <= ?`);
  }

  async insert(link: UploadLinkRecord): Promise<void> {
    this.#insert.run(
      link.idHash,
      link.jti,
      link.cid,
      link.size,
      link.contentType,
      link.filename,
      link.expiresMs,
    );
  }

  async get(idHash: string, nowMs: number): Promise<UploadLinkRecord | null> {
    const row = this.#get.get(idHash, nowMs) as UploadLinkRow | undefined;
    return row === undefined ? null : uploadLinkOf(row);
  }

  async consume(idHash: string, nowMs: number): Promise<boolean> {
    return Number(this.#consume.run(idHash, nowMs).changes) === 1;
  }

  async pruneExpired(nowMs: number): Promise<number> {
    return Number(this.#pruneExpired.run(nowMs).changes);
  }
}
