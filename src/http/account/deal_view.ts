/**
 * How a deal is shown to its owner, in /api/files, GET /api/deals/{dealId} and
 * by deal extension and deletion; with a hand-off to a storage provider, with
 * its piece's `handoff` (absent without one, so nothing changes then).
 */
import type { DealRecord } from "../../domain/catalog_records.ts";
import type { Deal, DealState } from "../../kernel/wire.ts";
import type { Handoff } from "../../handoff/service.ts";

/** The deals as shown, each with its piece's hand-off when there is one. */
export async function dealViews(
  deals: readonly DealRecord[],
  options: { baseUrl: string; now: number; handoff: Handoff | null },
): Promise<Deal[]> {
  const views = deals.map((deal) => dealView(deal, options));
  if (options.handoff === null) return views;
  const handoffs = await options.handoff.viewsOf([...new Set(deals.map((d) => d.cid))]);
  return views.map((view) => ({ ...view, handoff: handoffs.get(view.cid) ?? null }));
}

export function dealView(deal: DealRecord, options: { baseUrl: string; now: number }): Deal {
  return {
    cid: deal.cid,
    dealId: deal.id,
    size: Number(deal.size),
    contentType: deal.contentType,
    filename: deal.filename,
    createdAt: deal.createdAt,
    term: `${deal.termDays} days`,
    termEndsAt: deal.termEndsAt,
    state: dealStateAt(deal, options.now),
    deletedAt: deal.deletedAt,
    retrievalUrl: `${options.baseUrl}/p/${deal.cid}`,
  };
}

/**
 * A deal's state at an instant (Unix ms): deleted once its owner ended it,
 * else active until its termEndsAt and expired from then on. The records'
 * state filter says the same in SQL (CatalogRecords.listDeals).
 */
export function dealStateAt(
  deal: Pick<DealRecord, "deletedAt" | "termEndsAt">,
  now: number,
): DealState {
  if (deal.deletedAt !== null) return "deleted";
  return Date.parse(deal.termEndsAt) > now ? "active" : "expired";
}
