/**
 * Why: every number the fake provider waits on or counts up to, in one place,
 * with Curio's own value as the default (filecoin-project/curio:
 * tasks/pdpv0/task_pull_piece.go for the pull retries and budget,
 * pdp/pull_types.go for the pull backpressure, pdp/ip_offense_throttle.go for
 * the offense block). A test sets the delays to milliseconds so it runs fast;
 * the chain timings (a transaction landing, Curio's watchers recording it, the
 * proving period that carries out scheduled removals) have no fixed value in
 * Curio and default to one Filecoin epoch (30 s) each.
 */
import type { Address } from "viem";
import { calibration } from "@filoz/synapse-core/chains";

export interface FakePdpOptions {
  /** EIP-712 domain chain id (default 314159, calibration). */
  chainId: number;
  /**
   * The Warm Storage (FWSS) contract: the only record keeper a "public"
   * service accepts (Curio's AllowedPublicRecordKeepers) and the EIP-712
   * verifying contract. Default: calibration's FWSS address in synapse-core.
   */
  recordKeeper: Address;
  /** The provider's payee as the registry knows it: CreateDataSet is signed over it. */
  payee: Address;
  /** Accept http:// sources, as Curio does with CURIO_PULL_ALLOW_INSECURE=1 (default true). */
  allowInsecureSources: boolean;
  /** The clock every delay is measured on (default Date.now). */
  now: () => number;
  /** How often the pull scheduler looks for due work (Curio: 5 s). */
  schedulerIntervalMs: number;
  /** Delay before a retry after the first transient failure, then after later ones (30 s, 2 min). */
  retryDelaysMs: readonly [number, number];
  /** Attempts before a transiently failing piece fails for good (3). */
  maxAttempts: number;
  /** Wall-clock budget of a pull item (30 min). */
  pullItemBudgetMs: number;
  /** Unique pending pieces the whole node accepts (120). */
  pullGlobalPendingLimit: number;
  /** Unique pending pieces one payer may hold while others are queued too (10). */
  pullPerClientPendingLimit: number;
  /** Share of the global limit a payer may borrow on an otherwise idle node (90 %). */
  pullSoloClientPendingPercent: number;
  /** Time from sending a transaction to its landing on chain. */
  confirmAfterMs: number;
  /** Time from landing to Curio's watcher recording the data set or the pieces. */
  settleAfterMs: number;
  /** Time from a removal landing to the proving period that removes the pieces. */
  provingPeriodMs: number;
  /** Adds to a missing data set that block the client (5) … */
  offenseHits: number;
  /** … within this window (1 min) … */
  offenseWindowMs: number;
  /** … for this long (5 min). */
  offenseBlockMs: number;
}

const EPOCH_MS = 30_000;

export const DEFAULT_OPTIONS: FakePdpOptions = {
  chainId: calibration.id,
  recordKeeper: calibration.contracts.fwss.address,
  payee: "0x00000000000000000000000000000000000Fa4e5",
  allowInsecureSources: true,
  now: Date.now,
  schedulerIntervalMs: 5_000,
  retryDelaysMs: [30_000, 120_000],
  maxAttempts: 3,
  pullItemBudgetMs: 30 * 60_000,
  pullGlobalPendingLimit: 120,
  pullPerClientPendingLimit: 10,
  pullSoloClientPendingPercent: 90,
  confirmAfterMs: EPOCH_MS,
  settleAfterMs: EPOCH_MS,
  provingPeriodMs: EPOCH_MS,
  offenseHits: 5,
  offenseWindowMs: 60_000,
  offenseBlockMs: 5 * 60_000,
};

export function resolveOptions(options: Partial<FakePdpOptions> = {}): FakePdpOptions {
  return { ...DEFAULT_OPTIONS, ...options };
}
