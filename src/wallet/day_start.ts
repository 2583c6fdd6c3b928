/**
 * A wallet's balance as its UTC day began: at the first block of the day.
 * The wallet tier's daily cap is the smaller of this and the balance now, so
 * coins moved to a fresh address during the day buy it no quota (the usage is
 * counted per address, and the fresh address had nothing at the day's start).
 *
 * The first block of the day is found once a day by a binary search over
 * block timestamps (about log2(height) reads: some 25 on a chain of ten
 * million blocks), and each address's balance at it once a day: neither
 * changes afterwards. Until a block of the day exists nothing can have moved
 * today, and the balance now is the day's start balance. A node that cannot
 * answer for an old block (a pruned, non-archive node) leaves the current
 * balance to count; that is logged once.
 */
import type { Address, PublicClient } from "viem";
import { erc20Abi } from "viem";
import type { Clock } from "../kernel/clock.ts";
import { utcDay } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";

/** Addresses whose day-start balance is remembered for the day. */
const MAX_REMEMBERED = 100_000;

export interface DayStartBalancesOptions {
  client: PublicClient;
  usdcAddress: Address;
  clock: Clock;
  logger: Logger;
  /** Describes an error without the RPC URL (it may carry an API key). */
  describe(error: unknown): string;
}

export class DayStartBalances {
  readonly #options: DayStartBalancesOptions;
  #firstBlock: { day: string; block: bigint } | null = null;
  #searching: { day: string; search: Promise<bigint | null> } | null = null;
  readonly #balances = new Map<string, { day: string; units: bigint }>();
  readonly #reading = new Map<string, Promise<bigint | null>>();
  #loggedUnanswerable = false;

  constructor(options: DayStartBalancesOptions) {
    this.#options = options;
  }

  /**
   * The balance at the first block of the current UTC day; null when the
   * balance now stands for it: the day has no block yet (nothing moved), or
   * the chain cannot tell.
   */
  async balanceOf(address: Address): Promise<bigint | null> {
    const day = utcDay(this.#options.clock.now());
    const key = address.toLowerCase();
    const known = this.#balances.get(key);
    if (known?.day === day) return known.units;
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = this.#read(key, address, day).finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    return await reading;
  }

  async #read(key: string, address: Address, day: string): Promise<bigint | null> {
    const { client, usdcAddress } = this.#options;
    try {
      const block = await this.#firstBlockOf(day);
      if (block === null) return null;
      const units = await client.readContract({
        address: usdcAddress,
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [address],
        blockNumber: block,
      });
      this.#remember(key, { day, units });
      return units;
    } catch (error) {
      if (!this.#loggedUnanswerable) {
        this.#loggedUnanswerable = true;
        this.#options.logger.warn(
          "wallet RPC cannot tell balances at the day's first block; the current balance alone " +
            "sets wallet caps while it cannot (logged once)",
          { error: this.#options.describe(error) },
        );
      }
      return null;
    }
  }

  /** Found once a day; "none yet" and failures are asked again by the next caller. */
  async #firstBlockOf(day: string): Promise<bigint | null> {
    if (this.#firstBlock?.day === day) return this.#firstBlock.block;
    if (this.#searching?.day !== day) {
      const dayStartMs = Date.parse(`${day}T00:00:00Z`);
      const entry = {
        day,
        search: findFirstBlockAtOrAfter(this.#options.client, dayStartMs).then((block) => {
          if (block !== null) this.#firstBlock = { day, block };
          return block;
        }).finally(() => {
          if (this.#searching === entry) this.#searching = null;
        }),
      };
      this.#searching = entry;
    }
    return await this.#searching!.search;
  }

  #remember(key: string, entry: { day: string; units: bigint }): void {
    this.#balances.delete(key);
    if (this.#balances.size >= MAX_REMEMBERED) {
      this.#balances.delete(this.#balances.keys().next().value!);
    }
    this.#balances.set(key, entry);
  }
}

/**
 * The number of the first block whose timestamp is at or after startMs, or
 * null when the newest block is older. Block timestamps never decrease.
 */
export async function findFirstBlockAtOrAfter(
  client: Pick<PublicClient, "getBlock">,
  startMs: number,
): Promise<bigint | null> {
  const start = BigInt(Math.ceil(startMs / 1000));
  const latest = await client.getBlock({ blockTag: "latest" });
  if (latest.timestamp < start) return null;
  // Invariant: block `high` is at or after start; every block below `low` is before it.
  let low = 0n;
  let high = latest.number;
  while (low < high) {
    const middle = (low + high) / 2n;
    const block = await client.getBlock({ blockNumber: middle });
    if (block.timestamp >= start) high = middle;
    else low = middle + 1n;
  }
  return high;
}
