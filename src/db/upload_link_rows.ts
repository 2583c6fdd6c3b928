/** A row of `upload_links` as both dialects read it (they name the columns alike), and its record. */
import type { UploadLinkRecord } from "../domain/auth_records.ts";

export interface UploadLinkRow {
  id_hash: string;
  jti: string;
  cid: string;
  size: number | bigint | string;
  content_type: string;
  filename: string | null;
  expires_ms: number | bigint | string;
}

export function uploadLinkOf(row: UploadLinkRow): UploadLinkRecord {
  return {
    idHash: row.id_hash,
    jti: row.jti,
    cid: row.cid,
    size: Number(row.size),
    contentType: row.content_type,
    filename: row.filename,
    expiresMs: Number(row.expires_ms),
  };
}
