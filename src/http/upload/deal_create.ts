/**
 * POST /api/deals {"cid"} [put] — a deal on bytes already stored, without
 * sending them: the caller's tier, term and caps, charged and answered exactly
 * as an upload of those bytes would be (the piece's size against the per-file
 * cap and the daily cap, the RateLimit fields, POST /api/upload's result).
 * Clients ask for it instead of skipping a piece someone else stored, so a
 * signed-in user owns a deal (and a row in /api/files) for every file they
 * uploaded. A cid nobody stored is 404: send its bytes. Its doc is
 * http/docs/upload_docs.ts's createDealDoc.
 */
import { normalizeCid } from "../../kernel/cid_format.ts";
import { requireScope } from "../../auth/scopes.ts";
import { ApiError } from "../../kernel/errors.ts";
import type { CapLedger } from "../../limits/daily_caps.ts";
import type { UploadPolicies } from "../../limits/tiers.ts";
import type { PieceCatalog } from "../../catalog/catalog.ts";
import type { Config } from "../../config/mod.ts";
import { jsonResponse } from "../pipeline/json.ts";
import { rateLimitHeaders } from "../../limits/rate_limit_headers.ts";
import type { Handler } from "../pipeline/router.ts";
import { checkFileCap, dealOwnerOf, reserveUpload, uploadResultOf } from "../../uploads/terms.ts";

export interface DealCreateDeps {
  config: Config;
  baseUrl: string;
  policies: UploadPolicies;
  ledger: CapLedger;
  catalog: PieceCatalog;
}

export function createDealCreateHandler(deps: DealCreateDeps): Handler {
  return async (_request, context) => {
    const caller = await context.caller();
    if (caller.kind === "token") requireScope(caller, "put");
    const { cid: given } = await context.readJson();
    const cid = typeof given === "string" ? normalizeCid(given) : null;
    if (cid === null) {
      throw new ApiError("invalid_cid", "cid (8 to 80 letters or digits) is required");
    }
    const piece = await deps.catalog.getPiece(cid);
    if (piece === null) throw notStored(cid);
    const policy = await deps.policies.policyFor(caller);
    context.logFields.tier = policy.tier;
    checkFileCap(policy, piece.size);
    const { reservation } = await reserveUpload(deps, policy, piece.size);
    try {
      const outcome = await deps.catalog.acceptDeal({
        cid,
        tier: policy.tier,
        owner: dealOwnerOf(caller),
        termDays: policy.termDays,
        usageSubject: policy.usageSubject,
        usageDay: reservation.day,
        reservation,
      });
      if (outcome.kind === "not_stored") throw notStored(cid);
      if (outcome.kind === "corrupt") {
        throw new ApiError(
          "piece_corrupt",
          "The stored bytes of this cid failed verification: upload them to repair it",
        );
      }
      const after = await deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
      return jsonResponse(
        200,
        uploadResultOf(outcome.deal, given as string, deps.baseUrl),
        rateLimitHeaders(after),
      );
    } finally {
      await reservation.release();
    }
  };
}

function notStored(cid: string): ApiError {
  return new ApiError("not_found", `Nothing is stored under ${cid}: upload its bytes instead`);
}
