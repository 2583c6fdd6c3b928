/**
 * What the wallet tier asks of the chain, over the operator's JSON-RPC
 * endpoint: a wallet's balance of the USDC-like token, now and as the UTC day
 * began (its daily cap is the smaller), and, for contract wallets, whether a
 * signature is theirs (ERC-1271 / ERC-6492).
 *
 * The RPC is someone else's service and will be down at times, so:
 * - balances are cached per address for the balance TTL, and one read is
 *   shared by every request that waits for the same address;
 * - when the RPC cannot be reached, a balance read in the last ten minutes is
 *   still used (marked stale); past that the answer is 503 wallet_unavailable;
 * - the chain id is checked before the first read and again after every
 *   failure (an endpoint that comes back may serve another chain), and
 *   `decimals()` is read once;
 * - a wrong chain is refused outright (no stale balance: it is not an
 *   outage but a misconfiguration);
 * - errors are recorded for /healthz and logged without the RPC URL, which may
 *   carry an API key; /healthz never waits long for a hanging RPC.
 */
import {
  BaseError,
  createPublicClient,
  erc20Abi,
  http,
  HttpRequestError,
  RpcRequestError,
  TimeoutError,
  verifyMessage,
} from "viem";
import type { Address, Hex, PublicClient } from "viem";
import { toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { ApiError } from "../kernel/errors.ts";
import type { Logger } from "../kernel/log.ts";
import { DayStartBalances } from "./day_start.ts";

/** A balance this old is still used while the RPC is unreachable (the decision's 10 minutes). */
export const STALE_BALANCE_LIMIT_MS = 10 * 60_000;
const DEFAULT_RPC_TIMEOUT_MS = 5_000;
/** Addresses whose balance is remembered; the oldest read is forgotten first. */
const MAX_CACHED_BALANCES = 100_000;
/** /healthz asks the RPC itself at most this often. */
const HEALTH_PROBE_INTERVAL_MS = 5_000;
/** …and waits this long for the answer before it reports what it knew (load balancers time out). */
const HEALTH_PROBE_WAIT_MS = 1_000;
/**
 * ERC-8010 signatures carry setup calls that the validator simulates before
 * checking; the account's owner did not sign those. Refused.
 */
const ERC8010_SUFFIX = "8010".repeat(16);

/** The RPC answers, but for another chain than the configured one. */
class ChainMismatchError extends Error {}

export interface WalletChainOptions {
  rpcUrl: string;
  chainId: number;
  usdcAddress: string;
  balanceTtlMs: number;
  clock: Clock;
  logger: Logger;
  rpcTimeoutMs?: number;
}

export interface WalletBalance {
  /** The balance in the token's smallest unit. */
  units: bigint;
  decimals: number;
  /** When the RPC answered it (ms). */
  readAt: number;
  /** True when the RPC is unreachable and an older read stands in. */
  stale: boolean;
}

export interface WalletChainHealth {
  ok: boolean;
  chainId: number;
  /** The chain id the RPC reported last; null before it answered once. */
  rpcChainId: number | null;
  lastError: string | null;
  /** RFC 3339: the last time the RPC answered. */
  lastSuccessAt: string | null;
}

export class WalletChain {
  readonly #options: WalletChainOptions;
  readonly #client: PublicClient;
  readonly #cache = new Map<string, { units: bigint; readAt: number }>();
  readonly #reading = new Map<string, Promise<WalletBalance>>();
  #decimals: number | null = null;
  #chainChecked = false;
  #rpcChainId: number | null = null;
  #lastError: string | null = null;
  #lastSuccessAt: number | null = null;
  #lastContactAt: number | null = null;
  #probing: Promise<void> | null = null;
  readonly #dayStart: DayStartBalances;

  constructor(options: WalletChainOptions) {
    this.#options = options;
    this.#client = createPublicClient({
      transport: http(options.rpcUrl, {
        timeout: options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS,
        // A stale balance or a 503 is decided here; viem's own retries would only delay it.
        retryCount: 0,
      }),
    });
    this.#dayStart = new DayStartBalances({
      client: this.#client,
      usdcAddress: options.usdcAddress as Address,
      clock: options.clock,
      logger: options.logger,
      describe: (error) => this.#describe(error),
    });
  }

  /**
   * The wallet's balance at the first block of the current UTC day (see
   * day_start.ts); null when the balance now stands for it.
   */
  dayStartBalanceOf(address: Address): Promise<bigint | null> {
    return this.#dayStart.balanceOf(address);
  }

  /** The wallet's token balance: fresh, cached or stale; 503 wallet_unavailable otherwise. */
  async balanceOf(address: Address): Promise<WalletBalance> {
    const key = address.toLowerCase();
    const cached = this.#cache.get(key);
    const now = this.#options.clock.now();
    if (cached && this.#decimals !== null && now - cached.readAt < this.#options.balanceTtlMs) {
      return { units: cached.units, decimals: this.#decimals, readAt: cached.readAt, stale: false };
    }
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = this.#readBalance(key, address).finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    try {
      return await reading;
    } catch (error) {
      if (error instanceof ChainMismatchError) throw unavailable(error.message);
      const recent = this.#cache.get(key);
      if (recent && this.#decimals !== null && now - recent.readAt <= STALE_BALANCE_LIMIT_MS) {
        return {
          units: recent.units,
          decimals: this.#decimals,
          readAt: recent.readAt,
          stale: true,
        };
      }
      throw unavailable(this.#describe(error));
    }
  }

  /**
   * Whether a contract wallet (ERC-1271, or ERC-6492 before it is deployed)
   * accepts the signature of the message. An account's own key is checked
   * first, without the RPC; only the chain can speak for a contract.
   */
  async verifySignature(input: { address: Address; message: string; signature: Hex }) {
    if (input.signature.toLowerCase().endsWith(ERC8010_SUFFIX)) return false;
    try {
      if (await verifyMessage(input)) return true;
    } catch {
      // Not a recoverable ECDSA signature; a contract wallet may still accept it.
    }
    try {
      await this.#checkChain();
      const valid = await this.#client.verifyMessage(input);
      if (!valid) {
        // viem answers false, not an error, when the validator call could not be made at all
        // (it folds a refused connection into "not valid"): only a chain that answers may say
        // no, so ask it something before believing the false.
        this.#chainChecked = false;
        await this.#checkChain();
      }
      this.#recordSuccess();
      return valid;
    } catch (error) {
      if (!isUnreachable(error)) return false;
      this.#recordFailure(error);
      throw unavailable(this.#describe(error));
    }
  }

  /**
   * The tier's state for /healthz. When the RPC has not been heard from
   * recently it is probed (one probe at a time: chain id and the token's
   * decimals, so a wrong token address shows too), waited for at most a
   * second; a hanging RPC shows up in the next answer.
   */
  async health(): Promise<WalletChainHealth> {
    const now = this.#options.clock.now();
    if (this.#lastContactAt === null || now - this.#lastContactAt >= HEALTH_PROBE_INTERVAL_MS) {
      this.#probing ??= this.#probe().finally(() => this.#probing = null);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.#probing,
        new Promise((resolve) => timer = setTimeout(resolve, HEALTH_PROBE_WAIT_MS)),
      ]);
      clearTimeout(timer);
    }
    return {
      // Not ok before the RPC answered once: a hanging RPC is not a healthy one.
      ok: this.#lastError === null && this.#lastSuccessAt !== null,
      chainId: this.#options.chainId,
      rpcChainId: this.#rpcChainId,
      lastError: this.#lastError,
      lastSuccessAt: this.#lastSuccessAt === null ? null : toRfc3339(this.#lastSuccessAt),
    };
  }

  async #probe(): Promise<void> {
    this.#chainChecked = false;
    try {
      await this.#checkChain();
      this.#decimals = await this.#readDecimals();
      this.#recordSuccess();
    } catch (error) {
      this.#recordFailure(error);
    }
  }

  #readDecimals(): Promise<number> {
    return this.#client.readContract({
      address: this.#options.usdcAddress as Address,
      abi: erc20Abi,
      functionName: "decimals",
    });
  }

  async #readBalance(key: string, address: Address): Promise<WalletBalance> {
    try {
      await this.#checkChain();
      this.#decimals ??= await this.#readDecimals();
      const units = await this.#client.readContract({
        address: this.#options.usdcAddress as Address,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [address],
      });
      const readAt = this.#options.clock.now();
      this.#remember(key, { units, readAt });
      this.#recordSuccess();
      return { units, decimals: this.#decimals, readAt, stale: false };
    } catch (error) {
      this.#recordFailure(error);
      throw error;
    }
  }

  async #checkChain(): Promise<void> {
    if (this.#chainChecked) return;
    try {
      this.#rpcChainId = await this.#client.getChainId();
    } catch (error) {
      this.#recordFailure(error);
      throw error;
    }
    if (this.#rpcChainId !== this.#options.chainId) {
      const error = new ChainMismatchError(
        `the RPC serves chain ${this.#rpcChainId}, not the configured ${this.#options.chainId}`,
      );
      this.#recordFailure(error);
      throw error;
    }
    this.#chainChecked = true;
    this.#recordSuccess();
  }

  #remember(key: string, entry: { units: bigint; readAt: number }): void {
    this.#cache.delete(key);
    if (this.#cache.size >= MAX_CACHED_BALANCES) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(key, entry);
  }

  #recordSuccess(): void {
    const now = this.#options.clock.now();
    if (this.#lastError !== null) this.#options.logger.info("wallet RPC answers again");
    this.#lastError = null;
    this.#lastSuccessAt = now;
    this.#lastContactAt = now;
  }

  #recordFailure(error: unknown): void {
    const described = this.#describe(error);
    if (this.#lastError === null) {
      this.#options.logger.warn("wallet RPC failed", { error: described });
    }
    this.#lastError = described;
    this.#lastContactAt = this.#options.clock.now();
    this.#chainChecked = false;
  }

  /** A one-line reason without the RPC URL (it may hold an API key). */
  #describe(error: unknown): string {
    const base = error instanceof BaseError
      ? [error.shortMessage, error.details].filter(Boolean).join(": ")
      : error instanceof Error
      ? error.message
      : String(error);
    return base.replaceAll(this.#options.rpcUrl, "<rpc>").replace(/\s+/g, " ").slice(0, 300);
  }
}

/**
 * A transport failure (or the wrong chain) says nothing about a signature;
 * any other error of viem's (a reverted validator call) means "not valid".
 */
function isUnreachable(error: unknown): boolean {
  if (error instanceof ChainMismatchError) return true;
  if (!(error instanceof BaseError)) return false;
  return error.walk((e) =>
    e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof RpcRequestError
  ) !== null;
}

/** The 503; its cause (logged) is the described reason, never viem's error with the URL in it. */
function unavailable(reason: string): ApiError {
  return new ApiError(
    "wallet_unavailable",
    "The wallet tier cannot read from its chain right now; retry shortly",
    { headers: { "retry-after": "5" }, cause: new Error(reason) },
  );
}
