/**
 * GET /api/limits[?size=N] — any caller (token optional): the tier it would
 * upload in, the per-file and daily caps, what is used and left today and
 * when that resets, and every tier this server offers. With ?size=N it also
 * answers whether an upload of N bytes would be accepted right now, before
 * the client sends gigabytes. A wallet caller's cap comes from its balance,
 * which is shown with it (and may be 503 wallet_unavailable, as its upload
 * would be).
 */
import { formatUnits } from "viem";
import { ApiError } from "../../kernel/errors.ts";
import { toRfc3339 } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Config } from "../../config/mod.ts";
import type { CapLedger } from "../../domain/cap_ledger.ts";
import type { UploadPolicies, UploadPolicy } from "../../limits/tiers.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { Limits, TierInfo, WalletLimits } from "../../kernel/wire.ts";

export interface LimitsDeps {
  config: Config;
  policies: UploadPolicies;
  ledger: CapLedger;
  clock: Clock;
}

export function createLimitsHandler(deps: LimitsDeps): Handler {
  const tiers = tiersOf(deps.config);
  return async (_request, context) => {
    const caller = await context.caller();
    // A bad ?size= is refused before the chain is asked for a balance.
    const size = parseSize(context.url.searchParams.get("size"));
    const policy = await deps.policies.policyFor(caller);
    const status = await deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
    const body: Limits = {
      tier: policy.tier,
      maxFileBytes: policy.maxFileBytes,
      dailyCapBytes: policy.dailyCapBytes,
      usedTodayBytes: status.usedBytes + status.reservedBytes,
      remainingTodayBytes: status.remainingBytes,
      resetsAt: toRfc3339(deps.clock.now() + status.resetSeconds * 1000),
      resetSeconds: status.resetSeconds,
      tiers,
    };
    if (policy.walletBalance) body.wallet = walletLimitsOf(policy, deps.config);
    if (size !== null) {
      const refusal = policy.maxFileBytes !== null && size > policy.maxFileBytes
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

function parseSize(raw: string | null): number | null {
  if (raw === null) return null;
  const size = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new ApiError("invalid_request", "size must be a whole number of bytes, at least 1");
  }
  return size;
}

/** The tiers this server has: the wallet tier only with an RPC to read balances from. */
function tiersOf(config: Config): TierInfo[] {
  const tiers: TierInfo[] = [
    {
      tier: "sponsored",
      auth: "none",
      maxFileBytes: config.sponsored.maxFileBytes,
      dailyCapBytes: config.sponsored.dailyCapBytes,
      termDays: config.sponsored.termDays,
    },
    {
      tier: "token",
      auth: "token",
      maxFileBytes: config.token.maxFileBytes,
      dailyCapBytes: config.token.dailyCapBytes,
      termDays: config.token.termDays,
    },
  ];
  if (config.wallet.rpcUrl !== null) {
    tiers.push({
      tier: "wallet",
      auth: "wallet",
      maxFileBytes: config.wallet.maxFileBytes,
      dailyCapBytes: null,
      termDays: config.wallet.termDays,
      bytesPerUsdc: config.wallet.bytesPerUsdc,
    });
  }
  return tiers;
}

function walletLimitsOf(policy: UploadPolicy, config: Config): WalletLimits {
  const balance = policy.walletBalance!;
  return {
    address: balance.address,
    usdcBalance: formatUnits(balance.units, balance.decimals),
    dayStartUsdcBalance: balance.dayStartUnits === null
      ? null
      : formatUnits(balance.dayStartUnits, balance.decimals),
    bytesPerUsdc: config.wallet.bytesPerUsdc,
    balanceReadAt: toRfc3339(balance.readAt),
    stale: balance.stale,
  };
}
