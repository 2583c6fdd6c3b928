/**
 * The test harness for a real EVM chain: tests that touch wallets run against
 * anvil with the real Test USD Coin contract, no mocks, so the eth_call the
 * server makes is answered by a node as it would be in production. Dispose the
 * chain with `await using`, which stops the process it started.
 *
 * It wraps scripts/testnet/chain.ts for tests: an ephemeral port, and a state
 * file in a temp directory so `stop()` then `start()` brings the same chain
 * back on the same port (anvil --state dumps it on SIGTERM and loads it again).
 */
import {
  aDayAgoSeconds,
  type ChainEndpoint,
  DEFAULT_CHAIN_ID,
  type DevAccount,
  devAccounts,
  spawnAnvil,
} from "../../scripts/testnet/chain.ts";
import type { AnvilNode } from "../../scripts/testnet/chain.ts";

export { catchUpToNow, deployTestUsdc, formatUsdc, usdc } from "../../scripts/testnet/chain.ts";
export type { DevAccount, TestUsdc } from "../../scripts/testnet/chain.ts";

export interface StartAnvilOptions {
  /** Default 0: a free port the system picks, kept across `stop()`/`start()`. */
  port?: number;
  /** Default 31337. */
  chainId?: number;
  /** Where the chain is kept across restarts (default: a temp file, removed on dispose). */
  stateFile?: string;
  /** Keep no state for past blocks, like a node that is not an archive. */
  pruneHistory?: boolean;
}

export interface Anvil extends ChainEndpoint, AsyncDisposable {
  readonly rpcUrl: string;
  readonly port: number;
  readonly chainId: number;
  /** anvil's dev accounts, each funded with 10,000 ether. */
  readonly accounts: readonly DevAccount[];
  readonly isRunning: boolean;
  /** Stops anvil (SIGTERM), which writes the chain to the state file. */
  stop(): Promise<void>;
  /** Starts anvil again on the same port, from the state file. */
  start(): Promise<void>;
}

export async function startAnvil(options: StartAnvilOptions = {}): Promise<Anvil> {
  const tempDir = options.stateFile === undefined
    ? await Deno.makeTempDir({ prefix: "anvil-test-" })
    : undefined;
  const stateFile = options.stateFile ?? `${tempDir}/state.json`;
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  let node: AnvilNode;
  try {
    // A day back: what a test sets up lies on an earlier UTC day than the server's today, so
    // balances count in full until the test calls catchUpToNow (see the wallet cap's rule).
    node = await spawnAnvil({
      port: options.port ?? 0,
      chainId,
      stateFile,
      genesisTimestamp: aDayAgoSeconds(),
      pruneHistory: options.pruneHistory,
    });
  } catch (error) {
    if (tempDir) await Deno.remove(tempDir, { recursive: true });
    throw error;
  }
  // The port anvil bound first, so the RPC URL stays valid across restarts.
  const { port, rpcUrl } = node;
  return {
    rpcUrl,
    port,
    chainId,
    accounts: devAccounts(),
    get isRunning() {
      return node.isRunning;
    },
    stop: () => node.stop(),
    async start() {
      if (node.isRunning) throw new Error(`anvil is already running at ${rpcUrl}`);
      node = await spawnAnvil({ port, chainId, stateFile });
    },
    async [Symbol.asyncDispose]() {
      try {
        await node.stop();
      } finally {
        if (tempDir) await Deno.remove(tempDir, { recursive: true });
      }
    },
  };
}
