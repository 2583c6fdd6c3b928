/**
 * POST /api/deals/{dealId}/extend [pin] — adds one term of the deal's tier to
 * its end date and returns the deal. A deal of another user, a sponsored deal
 * (it has no owner) or an unknown id is 404 alike.
 */
import { ApiError } from "../errors.ts";
import { requireTokenScope } from "../auth/scopes.ts";
import { addDays, toRfc3339 } from "../clock.ts";
import type { Config } from "../config.ts";
import type { CatalogRecords } from "../db/catalog_records.ts";
import { dealView } from "./deal_view.ts";
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";

export interface DealDeps {
  records: CatalogRecords;
  config: Config;
  baseUrl: string;
}

export function createExtendDealHandler(deps: DealDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenScope(await context.caller(), "pin");
    const deal = deps.records.getDeal(context.params.dealId);
    if (deal === null || deal.ownerSub !== caller.sub) {
      throw new ApiError("not_found", "No such deal");
    }
    const termDays = deal.tier === "token"
      ? deps.config.token.termDays
      : deps.config.sponsored.termDays;
    const termEndsAt = toRfc3339(addDays(Date.parse(deal.termEndsAt), termDays));
    deps.records.extendDeal(deal.id, termDays, termEndsAt);
    return jsonResponse(200, dealView(deps.records.getDeal(deal.id)!, deps.baseUrl));
  };
}
