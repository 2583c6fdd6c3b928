/** Signed upload links in PostgreSQL: as db/sqlite/upload_link_records.ts. */
import type { Sql } from "./connection.ts";
import type { UploadLinkRecord, UploadLinkRecords } from "../../domain/auth_records.ts";
import { uploadLinkOf } from "../upload_link_rows.ts";
import type { UploadLinkRow } from "../upload_link_rows.ts";

export class PostgresUploadLinkRecords implements UploadLinkRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async insert(link: UploadLinkRecord): Promise<void> {
    await this.#sql`INSERT INTO upload_links
      (id_hash, jti, cid, size, content_type, filename, expires_ms)
      VALUES (${link.idHash}, ${link.jti}, ${link.cid}, ${link.size}, ${link.contentType},
              ${link.filename}, ${link.expiresMs})`;
  }

  async get(idHash: string, nowMs: number): Promise<UploadLinkRecord | null> {
    const rows = await this.#sql`SELECT * FROM upload_links
      WHERE id_hash = ${idHash} AND expires_ms > ${nowMs}`;
    return rows.length === 0 ? null : uploadLinkOf(rows[0] as unknown as UploadLinkRow);
  }

  async consume(idHash: string, nowMs: number): Promise<boolean> {
    const result = await this.#sql`DELETE FROM upload_links
      WHERE id_hash = ${idHash} AND expires_ms > ${nowMs}`;
    return result.count === 1;
  }

  async pruneExpired(nowMs: number): Promise<number> {
    return (await this.#sql`DELETE FROM upload_links WHERE expires_ms <= ${nowMs}`).count;
  }
}
