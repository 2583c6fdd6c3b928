/**
 * The caller's daily cap as IETF RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers): the policy names the quota in bytes
 * per day, RateLimit says what is left and in how many seconds it resets.
 */
import type { CapStatus } from "../domain/cap_ledger.ts";

export function rateLimitHeaders(status: CapStatus): Record<string, string> {
  return {
    "ratelimit-policy": `"daily";q=${status.capBytes};w=86400;qu="content-bytes"`,
    "ratelimit": `"daily";r=${status.remainingBytes};t=${status.resetSeconds}`,
  };
}
