/**
 * A deal's owner reads it [list] (GET /api/deals/{dealId}: the deal, with its
 * piece's hand-off to the storage provider when there is one) and acts on it
 * [pin]:
 *
 * - POST /api/deals/{dealId}/extend adds one term of the deal's tier to its
 *   end date and returns the deal. A term may end at most --max-term-days
 *   from now (five years by default): storage promised further ahead than
 *   the service can plan for is a promise it cannot keep. An extension past
 *   that is clamped (still 200); the deal shows its real end and the days
 *   actually added. An expired deal may be extended while its piece is still
 *   stored (the grace period); a deleted deal, or one whose piece was
 *   removed, is 410 gone.
 * - DELETE /api/deals/{dealId} ends the deal now (state "deleted") and
 *   returns it; deleting it again changes nothing. The quota its upload
 *   used is not given back. Once no deal keeps the piece, it is removed
 *   after the grace period (ops/gc.ts).
 *
 * A deal of another user, a sponsored deal (it has no owner) or an unknown
 * id is 404 alike.
 */
import { ApiError } from "../../kernel/errors.ts";
import { requireTokenScope } from "../../auth/scopes.ts";
import { addDays, DAY_MS, toRfc3339 } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Config } from "../../config/mod.ts";
import type { CatalogRecords, DealRecord } from "../../domain/catalog_records.ts";
import type { PieceCatalog } from "../../catalog/catalog.ts";
import { dealViews } from "./deal_view.ts";
import type { Handoff } from "../../handoff/service.ts";
import type { Scope } from "../../domain/vocabulary.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";

export interface DealDeps {
  records: CatalogRecords;
  catalog: PieceCatalog;
  config: Config;
  clock: Clock;
  baseUrl: string;
  handoff: Handoff | null;
}

export function createGetDealHandler(deps: DealDeps): Handler {
  return async (_request, context) => {
    const deal = await ownDeal(deps, context, "list");
    return await dealAnswer(deps, deal.id);
  };
}

export function createExtendDealHandler(deps: DealDeps): Handler {
  return async (_request, context) => {
    const deal = await ownDeal(deps, context, "pin");
    if (deal.deletedAt !== null) throw new ApiError("gone", "This deal was deleted");
    const termDays = deps.config[deal.tier].termDays;
    const endsAt = Date.parse(deal.termEndsAt);
    const latest = addDays(deps.clock.now(), deps.config.maxTermDays);
    // Whole days only, so term (days) and termEndsAt always agree; never shortened (a deal
    // already past the limit, after the flag was lowered, keeps its end).
    const roomDays = Math.max(0, Math.floor((latest - endsAt) / DAY_MS));
    const addedDays = Math.min(termDays, roomDays);
    const termEndsAt = toRfc3339(addDays(endsAt, addedDays));
    if (!await deps.catalog.extendDeal(deal, addedDays, termEndsAt)) {
      throw new ApiError("gone", `The piece ${deal.cid} was removed: upload it again`);
    }
    return await dealAnswer(deps, deal.id);
  };
}

export function createDeleteDealHandler(deps: DealDeps): Handler {
  return async (_request, context) => {
    const deal = await ownDeal(deps, context, "pin");
    await deps.records.deleteDeal(deal.id, toRfc3339(deps.clock.now()));
    return await dealAnswer(deps, deal.id);
  };
}

/** The caller's deal named by the path, or 404. */
async function ownDeal(
  deps: DealDeps,
  context: RequestContext,
  scope: Scope,
): Promise<DealRecord> {
  const caller = requireTokenScope(await context.caller(), scope);
  const deal = await deps.records.getDeal(context.params.dealId);
  if (deal === null || deal.ownerSub !== caller.sub) {
    throw new ApiError("not_found", "No such deal");
  }
  return deal;
}

async function dealAnswer(deps: DealDeps, id: string): Promise<Response> {
  const deal = (await deps.records.getDeal(id))!;
  const [view] = await dealViews([deal], {
    baseUrl: deps.baseUrl,
    now: deps.clock.now(),
    handoff: deps.handoff,
  });
  return jsonResponse(200, view);
}
