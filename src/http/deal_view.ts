/** How a deal is shown to its owner, in /api/files and by deal extension. */
import type { DealRecord } from "../db/catalog_records.ts";

export interface DealView {
  cid: string;
  dealId: string;
  size: number;
  contentType: string;
  filename: string | null;
  createdAt: string;
  term: string;
  termEndsAt: string;
  retrievalUrl: string;
}

export function dealView(deal: DealRecord, baseUrl: string): DealView {
  return {
    cid: deal.cid,
    dealId: deal.id,
    size: Number(deal.size),
    contentType: deal.contentType,
    filename: deal.filename,
    createdAt: deal.createdAt,
    term: `${deal.termDays} days`,
    termEndsAt: deal.termEndsAt,
    retrievalUrl: `${baseUrl}/p/${deal.cid}`,
  };
}
