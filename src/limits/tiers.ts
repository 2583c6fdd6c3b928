/**
 * What a caller may upload: its tier's per-file cap, its daily cap, the
 * counter the bytes are charged to, and the error code used when that cap is
 * reached.
 *
 * Sponsored callers and e-mail tokens get fixed caps (a token's quotaMb, at
 * most the tier's). A wallet token's daily cap is its USDC balance times
 * --wallet-bytes-per-usdc: the smaller of the balance now and at the first
 * block of the UTC day, read from the chain, so deciding it may take an RPC
 * round trip (cached) and may fail with 503 wallet_unavailable.
 */
import type { Caller } from "../auth/caller.ts";
import type { Config } from "../config/mod.ts";
import type { Tier } from "../domain/vocabulary.ts";
import { ApiError } from "../kernel/errors.ts";
import type { WalletBalance } from "../wallet/chain.ts";

export const MIB = 1024 * 1024;

export interface UploadPolicy {
  tier: Tier;
  /** null: no per-file cap (the wallet tier unless the operator set one). */
  maxFileBytes: number | null;
  dailyCapBytes: number;
  termDays: number;
  /** Counter key: "ip:<client key>" for sponsored uploads, "user:<sub>" for token uploads. */
  usageSubject: string;
  capExceededCode: "rate_limited" | "quota_exceeded";
  /** Most blocks one CAR upload may hold (413 too_many_blocks past it). */
  carMaxBlocks: number;
  /** Unfinished resumable uploads the caller may hold (429 too_many_uploads past it). */
  tusMaxOpen: number;
  /** The balances a wallet caller's cap was derived from. */
  walletBalance?: WalletCapBalance;
}

/**
 * A wallet's balance now, and as the UTC day began (null: the balance now
 * stands for it). The cap follows the smaller: coins moved today buy nothing.
 */
export interface WalletCapBalance extends WalletBalance {
  address: string;
  dayStartUnits: bigint | null;
}

/** Reads wallets' token balances (wallet/chain.ts). */
export interface WalletBalances {
  balanceOf(address: `0x${string}`): Promise<WalletBalance>;
  /** The balance at the first block of the current UTC day; null: the balance now stands for it. */
  dayStartBalanceOf(address: `0x${string}`): Promise<bigint | null>;
}

/** The balance the daily cap is derived from: the smaller of now and the day's start. */
export function capUnitsOf(balance: WalletCapBalance): bigint {
  const { units, dayStartUnits } = balance;
  return dayStartUnits !== null && dayStartUnits < units ? dayStartUnits : units;
}

export interface UploadPoliciesOptions {
  config: Config;
  /** null: this server has no wallet tier. */
  walletBalances: WalletBalances | null;
}

export class UploadPolicies {
  readonly #options: UploadPoliciesOptions;

  constructor(options: UploadPoliciesOptions) {
    this.#options = options;
  }

  /** The tier and per-file cap: known without asking the chain. */
  fileCapOf(caller: Caller): { tier: Tier; maxFileBytes: number | null } {
    const tier: Tier = caller.kind === "sponsored"
      ? "sponsored"
      : caller.account.kind === "wallet"
      ? "wallet"
      : "token";
    return { tier, maxFileBytes: this.#options.config[tier].maxFileBytes };
  }

  /** The caller's whole policy; a wallet's reads its balance (503 wallet_unavailable if it can't). */
  async policyFor(caller: Caller): Promise<UploadPolicy> {
    const { config, walletBalances } = this.#options;
    const { tier, maxFileBytes } = this.fileCapOf(caller);
    const termDays = config[tier].termDays;
    if (caller.kind === "sponsored") {
      return {
        tier,
        maxFileBytes,
        dailyCapBytes: config.sponsored.dailyCapBytes,
        termDays,
        usageSubject: usageSubjectOf(caller),
        capExceededCode: "rate_limited",
        carMaxBlocks: carMaxBlocksOf(config, tier),
        tusMaxOpen: config.sponsored.tusMaxOpen,
      };
    }
    const user = {
      tier,
      maxFileBytes,
      termDays,
      usageSubject: usageSubjectOf(caller),
      capExceededCode: "quota_exceeded" as const,
      carMaxBlocks: carMaxBlocksOf(config, tier),
      tusMaxOpen: config.token.tusMaxOpen,
    };
    const { account } = caller;
    if (account.kind === "email") {
      // A token's quota may be lower than the tier's cap, never higher.
      return {
        ...user,
        dailyCapBytes: Math.min(account.quotaMb * MIB, config.token.dailyCapBytes),
      };
    }
    if (walletBalances === null) {
      throw new ApiError(
        "wallet_unavailable",
        "This server has no wallet tier (any more); sign up with an e-mail instead",
      );
    }
    const address = account.address as `0x${string}`;
    const balance = await walletBalances.balanceOf(address);
    const walletBalance: WalletCapBalance = {
      ...balance,
      address,
      dayStartUnits: await walletBalances.dayStartBalanceOf(address),
    };
    const capBalance = { units: capUnitsOf(walletBalance), decimals: balance.decimals };
    return {
      ...user,
      dailyCapBytes: bytesForBalance(capBalance, config.wallet.bytesPerUsdc),
      walletBalance,
    };
  }
}

/** Most blocks one CAR upload of the tier may hold: the wallet tier shares the token tier's. */
export function carMaxBlocksOf(config: Config, tier: Tier): number {
  return tier === "sponsored" ? config.sponsored.carMaxBlocks : config.token.carMaxBlocks;
}

/**
 * The counter a caller's bytes are charged to: "ip:<client key>" sponsored,
 * "user:<sub>" with a token. Also who a resumable upload belongs to.
 */
export function usageSubjectOf(caller: Caller): string {
  return caller.kind === "sponsored" ? `ip:${caller.clientKey}` : `user:${caller.sub}`;
}

/** balance × bytes per whole token, rounded down; exact in bigint, capped to a safe integer. */
export function bytesForBalance(
  balance: Pick<WalletBalance, "units" | "decimals">,
  bytesPerToken: number,
): number {
  const bytes = balance.units * BigInt(bytesPerToken) / 10n ** BigInt(balance.decimals);
  return bytes > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(bytes);
}
