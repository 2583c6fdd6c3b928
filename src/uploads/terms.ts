/**
 * The steps every way of storing bytes shares (POST /api/upload, the tus
 * endpoint, POST /api/deals): which cid, whose deal, and whether the caps let
 * it through, decided from the length before a byte is read. One copy, so a
 * tus upload and a deal without bytes are refused and charged exactly as an
 * upload is.
 */
import type { HandoffView } from "../kernel/wire.ts";
import { formatUnits } from "viem";
import { normalizeCid } from "../kernel/cid_format.ts";
import type { Config } from "../config/mod.ts";
import type { DealRecord } from "../domain/catalog_records.ts";
import { ApiError } from "../kernel/errors.ts";
import type { CapLedger, CapStatus, Reservation, ReserveOptions } from "../domain/cap_ledger.ts";
import { capUnitsOf } from "../limits/tiers.ts";
import type { UploadPolicy, WalletCapBalance } from "../limits/tiers.ts";
import type { Caller, TokenCaller } from "../auth/caller.ts";
import { parseCid } from "../kernel/piece_cid/cid_codec.ts";
import type { ParsedCid } from "../kernel/piece_cid/cid_codec.ts";
import type { UploadResult } from "../kernel/wire.ts";
import { rateLimitHeaders } from "../limits/rate_limit_headers.ts";

/** The cid as given (answered back), canonical (stored), and parsed (what checks it). */
export interface UploadCid {
  given: string;
  cid: string;
  parsed: ParsedCid;
}

/** Checks a cid to store bytes under: its format, and whether this server takes it unchecked. */
export function uploadCidOf(given: string | null, config: Config, where = "cid"): UploadCid {
  const cid = normalizeCid(given);
  if (cid === null) {
    throw new ApiError(
      "invalid_cid",
      given === null ? `${where} is required` : `${where} must be 8 to 80 letters or digits`,
    );
  }
  const parsed = parseCid(cid);
  if (parsed.kind === "opaque" && config.requireVerifiableCids) {
    throw new ApiError(
      "invalid_cid",
      "This server accepts only cids it can verify: PieceCIDv2, PieceCIDv1 or a sha2-256 CIDv1",
    );
  }
  return { given: given!, cid, parsed };
}

/** A PieceCIDv2 fixes the payload size: no need to read a byte to refuse another length. */
export function checkLengthOfCid(parsed: ParsedCid, length: number): void {
  if (parsed.kind === "piece_v2" && parsed.payloadSize !== length) {
    throw new ApiError(
      "cid_mismatch",
      `This PieceCIDv2 is for ${parsed.payloadSize} bytes, not ${length}`,
    );
  }
}

/** 413 above the tier's per-file cap, saying how to get past it. */
export function checkFileCap(policy: UploadPolicy, length: number): void {
  if (policy.maxFileBytes === null || length <= policy.maxFileBytes) return;
  const past = policy.tier === "sponsored"
    ? "; a token (storage signup) raises it, and the storage CLI splits a larger file " +
      "into pieces under it"
    : policy.tier === "token"
    ? "; the storage CLI (or the SDK) splits a larger file into pieces under it"
    : "";
  throw new ApiError(
    "too_large",
    `File exceeds the ${policy.tier} tier's per-file limit of ${policy.maxFileBytes} bytes${past}`,
  );
}

export interface ReserveDeps {
  config: Config;
  ledger: CapLedger;
}

/**
 * Reserves `length` bytes against the caller's daily cap, or throws its 429
 * with Retry-After and the RateLimit fields.
 */
export async function reserveUpload(
  deps: ReserveDeps,
  policy: UploadPolicy,
  length: number,
  options: ReserveOptions = {},
): Promise<{ reservation: Reservation; status: CapStatus }> {
  const reserved = await deps.ledger.reserve(
    policy.usageSubject,
    length,
    policy.dailyCapBytes,
    options,
  );
  if (reserved.ok) return reserved;
  const cap = policy.capExceededCode === "rate_limited"
    ? "this IP's sponsored daily cap"
    : policy.walletBalance
    ? `the daily quota your balance of ${usdcText(policy.walletBalance)} USDC buys ` +
      "(the smaller of now and when the UTC day began)"
    : "your daily upload quota";
  const left = reserved.status.remainingBytes;
  const message = left > 0
    ? `This upload of ${length} bytes is larger than the ${left} bytes left of ${cap} ` +
      "today; it resets at 00:00 UTC"
    : `${cap[0].toUpperCase()}${cap.slice(1)} is used up for today; it resets at 00:00 UTC`;
  throw new ApiError(policy.capExceededCode, message, {
    headers: {
      "retry-after": String(retryAfterSeconds(policy, reserved.status.resetSeconds, deps.config)),
      ...rateLimitHeaders(reserved.status),
    },
  });
}

/** The deal's owner as the interface shows it: the e-mail, or the wallet's EIP-55 address. */
export function ownerNameOf(caller: TokenCaller): string {
  return caller.account.kind === "email" ? caller.account.email : caller.account.address;
}

/** The owner a deal of this caller records: none for a sponsored upload. */
export function dealOwnerOf(caller: Caller): { sub: string; name: string } | null {
  return caller.kind === "token" ? { sub: caller.sub, name: ownerNameOf(caller) } : null;
}

/**
 * The upload result JSON of a deal (POST /api/upload's answer, and the others'):
 * `roots` are a CAR upload's, null for any other.
 */
export function uploadResultOf(
  deal: DealRecord,
  givenCid: string,
  baseUrl: string,
  roots: string[] | null = null,
  /** With a hand-off: where the piece stands with the provider (absent otherwise). */
  handoff?: HandoffView | null,
): UploadResult {
  return {
    cid: givenCid,
    dealId: deal.id,
    size: deal.size,
    retrievalUrl: `${baseUrl}/p/${givenCid}`,
    term: `${deal.termDays} days`,
    sponsored: deal.tier === "sponsored",
    owner: deal.ownerName,
    roots,
    ...(handoff === undefined ? {} : { handoff }),
  };
}

/**
 * When to try again after a daily cap: at 00:00 UTC, or for a wallet as soon
 * as a topped-up balance would be read (the balance TTL), if that is sooner.
 */
function retryAfterSeconds(policy: UploadPolicy, resetSeconds: number, config: Config): number {
  if (!policy.walletBalance) return resetSeconds;
  return Math.min(resetSeconds, Math.max(1, Math.ceil(config.wallet.balanceTtlMs / 1000)));
}

function usdcText(balance: WalletCapBalance): string {
  return formatUnits(capUnitsOf(balance), balance.decimals);
}
