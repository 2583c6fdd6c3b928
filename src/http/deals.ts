/**
 * POST /api/deals/{dealId}/extend [pin] — adds one term of the deal's tier to
 * its end date and returns the deal. A deal of another user, a sponsored deal
 * (it has no owner) or an unknown id is 404 alike.
 *
 * A term may end at most --max-term-days from now (five years by default):
 * storage promised further ahead than the service can plan for is a promise
 * it cannot keep. An extension past that is clamped (still 200); the deal
 * shows its real end and the days actually added.
 */
import { ApiError } from "../errors.ts";
import { requireTokenScope } from "../auth/scopes.ts";
import { addDays, DAY_MS, toRfc3339 } from "../clock.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config/mod.ts";
import type { CatalogRecords } from "../db/records.ts";
import { dealView } from "./deal_view.ts";
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";
import { TOKEN_ERRORS } from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import { stringSchema } from "./schemas/json_schema.ts";

export interface DealDeps {
  records: CatalogRecords;
  config: Config;
  clock: Clock;
  baseUrl: string;
}

export const extendDealDoc: RouteDoc = {
  operationId: "extendDeal",
  summary: "Extend a deal's term by one term of its tier",
  description: "Another user's deal, a sponsored deal and an unknown id are all 404.",
  auth: "token",
  scope: "pin",
  parameters: [{
    name: "dealId",
    in: "path",
    description: "dealId of an upload",
    schema: stringSchema,
  }],
  responses: [{ status: 200, description: "The extended deal", body: { json: "Deal" } }],
  errors: [...TOKEN_ERRORS, "insufficient_scope", "not_found"],
};

export function createExtendDealHandler(deps: DealDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenScope(await context.caller(), "pin");
    const deal = await deps.records.getDeal(context.params.dealId);
    if (deal === null || deal.ownerSub !== caller.sub) {
      throw new ApiError("not_found", "No such deal");
    }
    const termDays = deps.config[deal.tier].termDays;
    const endsAt = Date.parse(deal.termEndsAt);
    const latest = addDays(deps.clock.now(), deps.config.maxTermDays);
    // Whole days only, so term (days) and termEndsAt always agree; never shortened (a deal
    // already past the limit, after the flag was lowered, keeps its end).
    const roomDays = Math.max(0, Math.floor((latest - endsAt) / DAY_MS));
    const addedDays = Math.min(termDays, roomDays);
    await deps.records.extendDeal(deal.id, addedDays, toRfc3339(addDays(endsAt, addedDays)));
    return jsonResponse(200, dealView((await deps.records.getDeal(deal.id))!, deps.baseUrl));
  };
}
