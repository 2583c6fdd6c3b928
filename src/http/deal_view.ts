/** How a deal is shown to its owner, in /api/files and by deal extension. */
import type { DealRecord } from "../db/records.ts";
import type { Deal } from "../wire.ts";

export function dealView(deal: DealRecord, baseUrl: string): Deal {
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
