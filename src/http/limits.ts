/**
 * GET /api/limits[?size=N] — any caller (token optional): the tier it would
 * upload in, the per-file and daily caps, what is used and left today and
 * when that resets. With ?size=N it also answers whether an upload of N
 * bytes would be accepted right now, before the client sends gigabytes.
 */
import { ApiError } from "../errors.ts";
import { toRfc3339 } from "../clock.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DailyCapLedger } from "../limits/daily_caps.ts";
import { uploadPolicyFor } from "../limits/tiers.ts";
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";
import type { Limits } from "./schemas/bodies.ts";

export interface LimitsDeps {
  config: Config;
  ledger: DailyCapLedger;
  clock: Clock;
}

export function createLimitsHandler(deps: LimitsDeps): Handler {
  return async (_request, context) => {
    const caller = await context.caller();
    const policy = uploadPolicyFor(caller, deps.config);
    const status = deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
    const body: Limits = {
      tier: policy.tier,
      maxFileBytes: policy.maxFileBytes,
      dailyCapBytes: policy.dailyCapBytes,
      usedTodayBytes: status.usedBytes + status.reservedBytes,
      remainingTodayBytes: status.remainingBytes,
      resetsAt: toRfc3339(deps.clock.now() + status.resetSeconds * 1000),
      resetSeconds: status.resetSeconds,
    };
    const rawSize = context.url.searchParams.get("size");
    if (rawSize !== null) {
      const size = /^\d{1,16}$/.test(rawSize) ? Number(rawSize) : NaN;
      if (!Number.isSafeInteger(size) || size < 1) {
        throw new ApiError("invalid_request", "size must be a whole number of bytes, at least 1");
      }
      const refusal = size > policy.maxFileBytes
        ? "too_large"
        : size > status.remainingBytes
        ? policy.capExceededCode
        : caller.kind === "token" && !caller.scopes.includes("put")
        ? "insufficient_scope"
        : null;
      body.size = size;
      body.accepted = refusal === null;
      body.reason = refusal;
    }
    return jsonResponse(200, body);
  };
}
