/**
 * What a caller may upload: its tier's per-file cap, its daily cap (for a
 * token, the token's quotaMb), the counter the bytes are charged to, and the
 * error code used when that cap is reached.
 */
import type { Caller } from "../auth/caller.ts";
import type { Config } from "../config.ts";
import type { Tier } from "../domain.ts";

export const MIB = 1024 * 1024;

export interface UploadPolicy {
  tier: Tier;
  maxFileBytes: number;
  dailyCapBytes: number;
  termDays: number;
  /** Counter key: "ip:<client key>" for sponsored uploads, "user:<sub>" for token uploads. */
  usageSubject: string;
  capExceededCode: "rate_limited" | "quota_exceeded";
}

export function uploadPolicyFor(caller: Caller, config: Config): UploadPolicy {
  if (caller.kind === "token") {
    return {
      tier: "token",
      maxFileBytes: config.token.maxFileBytes,
      // A token's quota may be lower than the tier's cap, never higher.
      dailyCapBytes: Math.min(caller.quotaMb * MIB, config.token.dailyCapBytes),
      termDays: config.token.termDays,
      usageSubject: `user:${caller.sub}`,
      capExceededCode: "quota_exceeded",
    };
  }
  return {
    tier: "sponsored",
    maxFileBytes: config.sponsored.maxFileBytes,
    dailyCapBytes: config.sponsored.dailyCapBytes,
    termDays: config.sponsored.termDays,
    usageSubject: `ip:${caller.clientKey}`,
    capExceededCode: "rate_limited",
  };
}
