/**
 * POST /api/upload?cid=… — stages a file.
 *
 * Checks run in the order decisions.md fixes: cid format, then the caller
 * (token validity, revocation, put scope), then headers (length, type,
 * filename), then caps. Caps are decided from Content-Length before a byte
 * of the body is read, and the length is reserved so parallel uploads cannot
 * jointly pass a daily cap.
 */
import { formatUnits } from "viem";
import { normalizeCid } from "../cid_format.ts";
import { ApiError } from "../errors.ts";
import type { PieceCatalog } from "../storage/catalog.ts";
import type { PieceStore } from "../storage/driver/driver.ts";
import { parseCid } from "../piece_cid/cid_codec.ts";
import type { HashWorkerPool } from "../piece_cid/pool.ts";
import type { Config } from "../config/mod.ts";
import type { CapLedger, CapStatus } from "../limits/daily_caps.ts";
import { notAdmitted } from "../limits/upload_admission.ts";
import type { UploadAdmission } from "../limits/upload_admission.ts";
import { capUnitsOf } from "../limits/tiers.ts";
import type { UploadPolicies, UploadPolicy, WalletCapBalance } from "../limits/tiers.ts";
import { requireScope } from "../auth/scopes.ts";
import type { TokenCaller } from "../auth/caller.ts";
import { requireContentLength } from "./body.ts";
import { decodeFilename, requireContentType } from "./upload_headers.ts";
import { jsonResponse } from "./json.ts";
import { rateLimitHeaders } from "./rate_limit_headers.ts";
import { stageChecked } from "./upload_stage.ts";
import { apiErrorOfStoreFailure } from "./store_errors.ts";
import type { Handler } from "./router.ts";
import type { UploadResult } from "../wire.ts";
import {
  BYTES_BODY_FRAMING,
  CID_DESCRIPTION,
  CID_SCHEMA,
  CONTENT_LENGTH_ERRORS,
  TOKEN_ERRORS,
} from "./route_doc.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { HeaderUse } from "./schemas/headers.ts";
import { stringSchema } from "./schemas/json_schema.ts";

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
const RATE_LIMIT_HEADERS: HeaderUse = { RateLimit: "always", "RateLimit-Policy": "always" };

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
    "cid_mismatch",
    "invalid_manifest",
    "manifest_incomplete",
    "invalid_car",
    "too_large",
    "rate_limited",
    "quota_exceeded",
    "incomplete_body",
    "request_timeout",
    "cid_conflict",
    "stage_failed",
    "storage_offline",
    "server_busy",
    "wallet_unavailable",
    "insufficient_storage",
  ],
};

export function createUploadHandler(deps: UploadDeps): Handler {
  return async (request, context) => {
    const givenCid = context.url.searchParams.get("cid");
    const cid = normalizeCid(givenCid);
    if (cid === null) {
      throw new ApiError(
        "invalid_cid",
        givenCid === null
          ? "Query parameter cid is required"
          : "cid must be 8 to 80 letters or digits",
      );
    }
    const parsedCid = parseCid(cid);
    if (parsedCid.kind === "opaque" && deps.config.requireVerifiableCids) {
      throw new ApiError(
        "invalid_cid",
        "This server accepts only cids it can verify: PieceCIDv2, PieceCIDv1 or a sha2-256 CIDv1",
      );
    }
    const caller = await context.caller();
    if (caller.kind === "token") requireScope(caller, "put");

    const length = requireContentLength(request.headers);
    const contentType = requireContentType(request.headers.get("content-type"));
    const filename = decodeFilename(request.headers.get("x-filename"));

    if (parsedCid.kind === "piece_v2" && parsedCid.payloadSize !== length) {
      // A PieceCIDv2 fixes the payload size: no need to read a byte to refuse this.
      throw new ApiError(
        "cid_mismatch",
        `This PieceCIDv2 is for ${parsedCid.payloadSize} bytes, not ${length}`,
      );
    }

    const policy = await deps.policies.policyFor(caller);
    // Known from here on, so refusals at the caps are logged (and counted) with it.
    context.logFields.tier = policy.tier;
    if (policy.maxFileBytes !== null && length > policy.maxFileBytes) {
      throw new ApiError(
        "too_large",
        `File exceeds the ${policy.tier} tier's per-file limit of ${policy.maxFileBytes} bytes`,
      );
    }
    const reserved = await deps.ledger.reserve(policy.usageSubject, length, policy.dailyCapBytes);
    if (!reserved.ok) throw capReached(policy, length, reserved.status, deps);
    context.logFields.bytesIn = length;

    const { reservation } = reserved;
    const admitted = deps.admission.admit({
      clientKey: context.clientKey,
      subject: caller.kind === "token" ? caller.sub : null,
    }, length);
    try {
      if (!admitted.ok) throw notAdmitted(admitted.reason);
      const { staged, verified, car, roots } = await stageChecked(deps, request, context, {
        cid,
        parsedCid,
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
        owner: caller.kind === "token" ? { sub: caller.sub, name: ownerNameOf(caller) } : null,
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
      const result: UploadResult = {
        cid: givenCid!, // not null: normalizeCid accepted it
        dealId: deal.id,
        size: deal.size,
        retrievalUrl: `${deps.baseUrl}/p/${givenCid}`,
        term: `${deal.termDays} days`,
        sponsored: caller.kind === "sponsored",
        owner: caller.kind === "token" ? ownerNameOf(caller) : null,
        roots: roots ?? null,
      };
      return jsonResponse(200, result, rateLimitHeaders(after));
    } finally {
      if (admitted.ok) admitted.release();
      await reservation.release();
    }
  };
}

/** The 429 at a daily cap: what is left of which cap, and when to try again. */
function capReached(
  policy: UploadPolicy,
  length: number,
  status: CapStatus,
  deps: UploadDeps,
): ApiError {
  const cap = policy.capExceededCode === "rate_limited"
    ? "this IP's sponsored daily cap"
    : policy.walletBalance
    ? `the daily quota your balance of ${usdcText(policy.walletBalance)} USDC buys ` +
      "(the smaller of now and when the UTC day began)"
    : "your daily upload quota";
  const left = status.remainingBytes;
  const message = left > 0
    ? `This upload of ${length} bytes is larger than the ${left} bytes left of ${cap} ` +
      "today; it resets at 00:00 UTC"
    : `${cap[0].toUpperCase()}${cap.slice(1)} is used up for today; it resets at 00:00 UTC`;
  return new ApiError(policy.capExceededCode, message, {
    headers: {
      "retry-after": String(retryAfterSeconds(policy, status.resetSeconds, deps)),
      ...rateLimitHeaders(status),
    },
  });
}

/**
 * When to try again after a daily cap: at 00:00 UTC, or for a wallet as soon
 * as a topped-up balance would be read (the balance TTL), if that is sooner.
 */
function retryAfterSeconds(policy: UploadPolicy, resetSeconds: number, deps: UploadDeps): number {
  if (!policy.walletBalance) return resetSeconds;
  return Math.min(resetSeconds, Math.max(1, Math.ceil(deps.config.wallet.balanceTtlMs / 1000)));
}

function usdcText(balance: WalletCapBalance): string {
  return formatUnits(capUnitsOf(balance), balance.decimals);
}

/** The deal's owner as the interface shows it: the e-mail, or the wallet's EIP-55 address. */
function ownerNameOf(caller: TokenCaller): string {
  return caller.account.kind === "email" ? caller.account.email : caller.account.address;
}
