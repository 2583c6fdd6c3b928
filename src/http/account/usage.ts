/**
 * GET /api/usage?from=YYYY-MM-DD&to=YYYY-MM-DD [list] — the caller's uploads
 * per UTC day (every day of the range, zeros included), the daily quota and
 * what is left of it today. Default range: the last 30 days; at most 366.
 */
import { ApiError } from "../../kernel/errors.ts";
import { requireTokenScope } from "../../auth/scopes.ts";
import { DAY_MS, utcDay } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { CatalogRecords } from "../../domain/catalog_records.ts";
import type { CapLedger } from "../../domain/cap_ledger.ts";
import type { UploadPolicies } from "../../limits/tiers.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { Usage, UsageDay } from "../../kernel/wire.ts";

/**
 * Days a report covers unless ?from= says otherwise, and the most a range
 * may cover; the API document states both (src/http/docs/account_docs.ts).
 */
export const USAGE_DAYS = { byDefault: 30, atMost: 366 } as const;

export interface UsageDeps {
  records: CatalogRecords;
  ledger: CapLedger;
  clock: Clock;
  policies: UploadPolicies;
}

export function createUsageHandler(deps: UsageDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenScope(await context.caller(), "list");
    const today = utcDay(deps.clock.now());
    const to = parseDay(context.url.searchParams.get("to"), "to") ?? today;
    const from = parseDay(context.url.searchParams.get("from"), "from") ??
      utcDay(Date.parse(to) - (USAGE_DAYS.byDefault - 1) * DAY_MS);
    const span = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
    if (span < 1) throw new ApiError("invalid_request", "from must not be after to");
    if (span > USAGE_DAYS.atMost) {
      throw new ApiError(
        "invalid_request",
        `The range may cover at most ${USAGE_DAYS.atMost} days`,
      );
    }
    const policy = await deps.policies.policyFor(caller);
    const rows = new Map(
      (await deps.records.usageBetween(policy.usageSubject, from, to)).map((r) => [r.day, r]),
    );
    const days: UsageDay[] = [];
    for (let t = Date.parse(from); t <= Date.parse(to); t += DAY_MS) {
      const date = utcDay(t);
      const row = rows.get(date);
      days.push({ date, bytes: row?.bytes ?? 0, uploads: row?.uploads ?? 0 });
    }
    const status = await deps.ledger.status(policy.usageSubject, policy.dailyCapBytes);
    const usage: Usage = {
      from,
      to,
      days,
      quotaBytes: policy.dailyCapBytes,
      remainingTodayBytes: status.remainingBytes,
    };
    return jsonResponse(200, usage);
  };
}

function parseDay(raw: string | null, name: string): string | null {
  if (raw === null) return null;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || utcDayOrNull(raw) !== raw) {
    throw new ApiError("invalid_request", `${name} must be a date like 2026-11-21`);
  }
  return raw;
}

function utcDayOrNull(day: string): string | null {
  const t = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(t) ? null : utcDay(t);
}
