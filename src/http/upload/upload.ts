/**
 * POST /api/upload?cid=… — stages a file.
 *
 * Checks run in the order decisions.md fixes: cid format, then the caller
 * (token validity, revocation, put scope), then headers (length, type,
 * filename), then caps. Caps are decided from Content-Length before a byte
 * of the body is read, and the length is reserved so parallel uploads cannot
 * jointly pass a daily cap.
 */
import type { PieceCatalog } from "../../catalog/catalog.ts";
import type { PieceStore } from "../../driver/driver.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/pool.ts";
import type { Config } from "../../config/mod.ts";
import type { CapLedger } from "../../domain/cap_ledger.ts";
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
import {
  BYTES_BODY_FRAMING,
  CID_DESCRIPTION,
  CID_SCHEMA,
  CONTENT_LENGTH_ERRORS,
  STORING_ERRORS,
  TOKEN_ERRORS,
} from "../docs/route_doc.ts";
import type { RouteDoc } from "../docs/route_doc.ts";
import type { HeaderUse } from "../docs/schemas/headers.ts";
import { stringSchema } from "../docs/schemas/json_schema.ts";

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

/** The caller's daily cap, sent by uploads, accepted or refused at the cap. */
export const RATE_LIMIT_HEADERS: HeaderUse = { RateLimit: "always", "RateLimit-Policy": "always" };

export const uploadDoc: RouteDoc = {
  operationId: "upload",
  summary: "Stage a file under its cid (sponsored without a token)",
  description: "PieceCIDv2, PieceCIDv1 and sha2-256 CIDv1 cids are checked against the " +
    "bytes; other cids are stored as given unless the server requires verifiable cids. " +
    "Size and caps are decided from Content-Length before a byte is read. Bytes under " +
    "a stored cid never change: the same bytes again answer 200, others 409. A manifest " +
    "(Content-Type application/vnd.storage-manifest+json) is accepted only when it parses " +
    "and every piece it lists is stored with the listed size. A body sent as " +
    "application/vnd.ipld.car (CARv1, or CARv2) is also checked block by block " +
    "(sha2-256 and identity multihashes; anything else, a block that does not hash to its " +
    "cid or a malformed CAR is 400 invalid_car, nothing stored), its blocks are then " +
    "served by /ipfs/{cid}, and the result names its roots.",
  auth: "optional",
  scope: "put",
  parameters: [
    {
      name: "cid",
      in: "query",
      required: true,
      description: CID_DESCRIPTION,
      schema: CID_SCHEMA,
    },
    {
      name: "X-Filename",
      in: "header",
      description: "The file's name, URL-encoded UTF-8, at most 255 bytes decoded, no " +
        "control characters and no bidirectional text controls (U+061C, U+200E-U+200F, " +
        "U+202A-U+202E, U+2066-U+2069); served back in Content-Disposition",
      schema: stringSchema,
    },
  ],
  requestBody: {
    description: `The file's bytes. ${BYTES_BODY_FRAMING} Its Content-Type (required; ` +
      "any media type but a form: multipart/form-data and " +
      "application/x-www-form-urlencoded are refused) is stored and served back.",
    body: { binary: true },
  },
  responses: [{
    status: 200,
    description: "Stored (or already stored with the same bytes)",
    body: { json: "UploadResult" },
    headers: RATE_LIMIT_HEADERS,
  }],
  errorHeaders: { 429: RATE_LIMIT_HEADERS },
  errors: [
    "invalid_cid",
    ...TOKEN_ERRORS,
    "insufficient_scope",
    ...CONTENT_LENGTH_ERRORS,
    "invalid_content_type",
    "invalid_filename",
    "invalid_manifest",
    "manifest_incomplete",
    "invalid_car",
    ...STORING_ERRORS,
    "storage_offline",
  ],
};

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
      const { staged, verified, car, roots } = await stageChecked(deps, request, context, {
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
        blocks: car?.blocks,
      }).catch((error) => {
        throw apiErrorOfStoreFailure(error);
      });
      // The bytes are in the persistent counter now (the commit settled the reservation).
      const after = await deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
      const result = uploadResultOf(deal, given, deps.baseUrl, roots ?? null);
      return jsonResponse(200, result, rateLimitHeaders(after));
    } finally {
      if (admitted.ok) admitted.release();
      await reservation.release();
    }
  };
}
