/**
 * POST /api/upload?cid=… — stages a file.
 *
 * Checks run in the order decisions.md fixes: cid format, then the caller
 * (token validity, revocation, put scope), then headers (length, type,
 * filename), then caps. Caps are decided from Content-Length before a byte
 * of the body is read, and the length is reserved so parallel uploads cannot
 * jointly pass a daily cap. Its doc is http/docs/upload_docs.ts's uploadDoc.
 */
import type { PieceCatalog } from "../../catalog/catalog.ts";
import type { PieceStore } from "../../driver/driver.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/pool.ts";
import type { Config } from "../../config/mod.ts";
import type { CapLedger } from "../../limits/daily_caps.ts";
import { notAdmitted } from "../../limits/upload_admission.ts";
import type { UploadAdmission } from "../../limits/upload_admission.ts";
import type { UploadPolicies } from "../../limits/tiers.ts";
import { requireScope } from "../../auth/scopes.ts";
import { requireContentLength } from "../pipeline/body.ts";
import { decodeFilename, requireContentType } from "../../uploads/type_and_name.ts";
import { jsonResponse } from "../pipeline/json.ts";
import { rateLimitHeaders } from "../../limits/rate_limit_headers.ts";
import { stageChecked } from "../../uploads/staging.ts";
import { apiErrorOfStoreFailure } from "../../uploads/store_errors.ts";
import type { Handler } from "../pipeline/router.ts";
import {
  checkFileCap,
  checkLengthOfCid,
  dealOwnerOf,
  reserveUpload,
  uploadCidOf,
  uploadResultOf,
} from "../../uploads/terms.ts";

export interface UploadDeps {
  config: Config;
  policies: UploadPolicies;
  baseUrl: string;
  store: PieceStore;
  catalog: PieceCatalog;
  ledger: CapLedger;
  /** Bounds the uploads in flight: server-wide (memory), each client's share, per address. */
  admission: UploadAdmission;
  /** Workers for piece-cid verification; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
}

export function createUploadHandler(deps: UploadDeps): Handler {
  return async (request, context) => {
    const { given, cid, parsed } = uploadCidOf(
      context.url.searchParams.get("cid"),
      deps.config,
      "Query parameter cid",
    );
    const caller = await context.caller();
    if (caller.kind === "token") requireScope(caller, "put");

    const length = requireContentLength(request.headers);
    const contentType = requireContentType(request.headers.get("content-type"));
    const filename = decodeFilename(request.headers.get("x-filename"));
    checkLengthOfCid(parsed, length);

    const policy = await deps.policies.policyFor(caller);
    // Known from here on, so refusals at the caps are logged (and counted) with it.
    context.logFields.tier = policy.tier;
    checkFileCap(policy, length);
    const { reservation } = await reserveUpload(deps, policy, length);
    context.logFields.bytesIn = length;

    const admitted = deps.admission.admit({
      clientKey: context.clientKey,
      subject: caller.kind === "token" ? caller.sub : null,
    }, length);
    try {
      if (!admitted.ok) throw notAdmitted(admitted.reason);
      const { staged, verified, blocks, roots } = await stageChecked(deps, request.body, context, {
        cid,
        parsedCid: parsed,
        length,
        contentType,
      });
      context.logFields.verified = verified;
      const deal = await deps.catalog.acceptUpload({
        cid,
        staged,
        contentType,
        filename,
        tier: policy.tier,
        owner: dealOwnerOf(caller),
        cidVerified: verified,
        termDays: policy.termDays,
        usageSubject: policy.usageSubject,
        usageDay: reservation.day,
        reservation,
        blocks,
      }).catch((error) => {
        throw apiErrorOfStoreFailure(error);
      });
      // The bytes are in the persistent counter now (the commit settled the reservation).
      const after = await deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
      const result = uploadResultOf(deal, given, deps.baseUrl, roots);
      return jsonResponse(200, result, rateLimitHeaders(after));
    } finally {
      if (admitted.ok) admitted.release();
      await reservation.release();
    }
  };
}
