/**
 * A real local EVM chain for tests and for people trying wallet tiers out:
 * anvil (Foundry's dev node, from npm) and the Test USD Coin token built from
 * test_usdc.sol. The server reads a wallet's USDC balance with eth_call; here
 * that read, and the writes that set balances up, go to a real node instead of
 * a mock. Shared by scripts/testnet.ts and tests/helpers/anvil.ts (scripts
 * never import from tests/, so the code lives here).
 *
 * anvil's dev accounts come from its well-known test mnemonic: their keys are
 * public, fine on a local chain and worthless anywhere else.
 */
import { pbkdf2Sync } from "node:crypto";
import anvilPackage from "@foundry-rs/anvil-linux-amd64/package.json" with { type: "json" };
import testUsdcArtifact from "./test_usdc.json" with { type: "json" };
import type { TestUsdcArtifact } from "./build_test_usdc.ts";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  formatUnits,
  getAddress,
  type Hash,
  type Hex,
  http,
  parseUnits,
  type PublicClient,
  toHex,
} from "viem";
import { HDKey, hdKeyToAccount, privateKeyToAccount } from "viem/accounts";

/** The anvil release this project runs: the npm package's version in deno.json. */
export const ANVIL_VERSION: string = anvilPackage.version;
/** anvil's (and Hardhat's) default test mnemonic. */
export const DEV_MNEMONIC = "test test test test test test test test test test test junk";
/** How many dev accounts anvil funds with ether (its default). */
export const DEV_ACCOUNT_COUNT = 10;
/** anvil's default chain id. */
export const DEFAULT_CHAIN_ID = 31337;
export const USDC_DECIMALS = 6;

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;
const READY_POLL_MS = 20;
/** How much of anvil's output is kept for error messages. */
const OUTPUT_TAIL_CHARS = 64 * 1024;

export interface DevAccount {
  /** EIP-55 checksummed. */
  readonly address: Address;
  readonly privateKey: Hex;
}

/** Where a chain answers JSON-RPC. */
export interface ChainEndpoint {
  readonly rpcUrl: string;
  readonly chainId: number;
}

// ---------------------------------------------------------------------------
// The binary

let npmCacheBinary: Promise<string> | undefined;

/**
 * The anvil executable: $ANVIL_BIN if set, otherwise the binary in Deno's npm
 * cache (the import of its package.json above made Deno download the package).
 */
export function anvilBinary(): Promise<string> {
  const override = Deno.env.get("ANVIL_BIN");
  if (override) return Promise.resolve(override);
  npmCacheBinary ??= findNpmCacheBinary().catch((error) => {
    npmCacheBinary = undefined; // let a later call try again
    throw error;
  });
  return npmCacheBinary;
}

async function findNpmCacheBinary(): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!info.success) throw new Error(`deno info --json failed: ${text.decode(info.stderr)}`);
  const { npmCache } = JSON.parse(text.decode(info.stdout)) as { npmCache?: string };
  if (!npmCache) throw new Error("deno info --json names no npmCache");
  const { name, version } = anvilPackage;
  const path = `${npmCache}/registry.npmjs.org/${name}/${version}/bin/anvil`;
  try {
    await Deno.stat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw new Error(`anvil ${version} is not at ${path} (is ${name} installed?); set ANVIL_BIN`);
  }
  return path;
}

// ---------------------------------------------------------------------------
// Dev accounts

let devAccountList: readonly DevAccount[] | undefined;

/** anvil's dev accounts (m/44'/60'/0'/0/i of DEV_MNEMONIC), derived with viem. */
export function devAccounts(): readonly DevAccount[] {
  if (devAccountList) return devAccountList;
  // BIP-39's seed, computed once with native PBKDF2 rather than once per account by
  // mnemonicToAccount (its JS PBKDF2 takes ~15 ms a call).
  const seed = pbkdf2Sync(DEV_MNEMONIC.normalize("NFKD"), "mnemonic", 2048, 64, "sha512");
  const root = HDKey.fromMasterSeed(seed);
  devAccountList = Object.freeze(
    Array.from({ length: DEV_ACCOUNT_COUNT }, (_, addressIndex) => {
      const account = hdKeyToAccount(root, { addressIndex });
      return Object.freeze({
        address: account.address,
        privateKey: toHex(account.getHdKey().privateKey!),
      });
    }),
  );
  return devAccountList;
}

// ---------------------------------------------------------------------------
// The node

export interface AnvilNodeOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8545; 0 lets the system pick a free port (read back from anvil's "Listening on"). */
  port?: number;
  /** Default 31337. */
  chainId?: number;
  /**
   * anvil --state: the chain is loaded from this file if it exists and dumped
   * to it when anvil stops on SIGTERM/SIGINT (as `stop()` does).
   */
  stateFile?: string;
  /** How long anvil may take to answer eth_chainId (default 10 s). */
  readyTimeoutMs?: number;
  /**
   * anvil --timestamp: the genesis block's time (seconds); later blocks follow
   * from there as the wall clock moves. A chain started a day back can be set
   * up "yesterday" and then brought to now with `catchUpToNow`.
   */
  genesisTimestamp?: number;
  /** anvil --prune-history: no state kept for past blocks, as on a node that is not an archive. */
  pruneHistory?: boolean;
}

/** A running anvil process, started by `spawnAnvil`. */
export interface AnvilNode extends ChainEndpoint {
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  /** False once the process has exited, whether stopped or not. */
  readonly isRunning: boolean;
  /** Resolves when the process has exited and its output is drained. */
  readonly exited: Promise<Deno.CommandStatus>;
  /** The last part of what anvil printed (stdout and stderr). */
  output(): string;
  /**
   * SIGTERM (anvil then dumps its --state file) and waits for the exit;
   * SIGKILL and an error if it takes over 10 s. Does nothing once exited.
   */
  stop(): Promise<void>;
}

/** Starts anvil and resolves once it answers eth_chainId with the expected chain id. */
export async function spawnAnvil(options: AnvilNodeOptions = {}): Promise<AnvilNode> {
  const {
    host = "127.0.0.1",
    port = 8545,
    chainId = DEFAULT_CHAIN_ID,
    stateFile,
    readyTimeoutMs = READY_TIMEOUT_MS,
  } = options;
  const args = [
    ["--host", host],
    ["--port", String(port)],
    ["--chain-id", String(chainId)],
    ["--mnemonic", DEV_MNEMONIC],
    ["--accounts", String(DEV_ACCOUNT_COUNT)],
    ["--color", "never"],
    stateFile === undefined ? [] : ["--state", stateFile],
    options.genesisTimestamp === undefined ? [] : ["--timestamp", String(options.genesisTimestamp)],
    options.pruneHistory ? ["--prune-history"] : [],
  ].flat();
  // Not --quiet: that also silences the "Listening on host:port" line, the only place
  // anvil tells which port it got for --port 0. Its per-request log is drained instead.
  const process = new Deno.Command(await anvilBinary(), {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const tail = new OutputTail();
  const listening = Promise.withResolvers<number | null>();
  let startupText: string | null = ""; // stdout up to the "Listening on" line, which may come split in chunks
  const drained = Promise.all([
    drain(process.stdout, (text) => {
      tail.append(text);
      if (startupText === null) return;
      startupText += text;
      const match = /Listening on \S+:(\d+)/.exec(startupText);
      if (match) {
        listening.resolve(Number(match[1]));
        startupText = null;
      }
    }),
    drain(process.stderr, (text) => tail.append(text)),
  ]).finally(() => listening.resolve(null));
  const exited = Promise.all([process.status, drained]).then(([status]) => status);

  // A hung start ends by killing the process, which ends its output and so every wait below.
  const deadline = killAfter(process, readyTimeoutMs);
  try {
    const boundPort = await listening.promise;
    if (boundPort !== null) {
      const rpcUrl = `http://${host.includes(":") ? `[${host}]` : host}:${boundPort}`;
      if (await answersChainId(rpcUrl, chainId, exited)) {
        return runningNode({ process, host, port: boundPort, rpcUrl, chainId, tail, exited });
      }
    }
  } finally {
    deadline.cancel();
  }
  killQuietly(process, "SIGKILL");
  const status = await exited;
  const why = deadline.fired
    ? `was not ready within ${readyTimeoutMs} ms`
    : `exited (${status.code})`;
  throw new Error(`anvil ${why}: ${args.join(" ")}\n${tail.text()}`);
}

function runningNode(parts: {
  process: Deno.ChildProcess;
  host: string;
  port: number;
  rpcUrl: string;
  chainId: number;
  tail: OutputTail;
  exited: Promise<Deno.CommandStatus>;
}): AnvilNode {
  const { process, tail, exited } = parts;
  let hasExited = false;
  const markExited = () => hasExited = true;
  exited.then(markExited, markExited);
  return {
    host: parts.host,
    port: parts.port,
    rpcUrl: parts.rpcUrl,
    chainId: parts.chainId,
    pid: process.pid,
    get isRunning() {
      return !hasExited;
    },
    exited,
    output: () => tail.text(),
    async stop() {
      if (hasExited) return;
      killQuietly(process, "SIGTERM");
      const deadline = killAfter(process, STOP_TIMEOUT_MS);
      try {
        await exited;
      } finally {
        deadline.cancel();
      }
      if (deadline.fired) {
        throw new Error(`anvil ignored SIGTERM for ${STOP_TIMEOUT_MS} ms and was killed`);
      }
    },
  };
}

/** Polls eth_chainId until it answers (true), or anvil exits first (false). */
async function answersChainId(
  rpcUrl: string,
  chainId: number,
  exited: Promise<unknown>,
): Promise<boolean> {
  let gone = false;
  const markGone = () => gone = true;
  exited.then(markGone, markGone);
  while (!gone) {
    try {
      const answer = await jsonRpc(rpcUrl, "eth_chainId", []);
      if (Number(answer) !== chainId) {
        throw new Error(`anvil at ${rpcUrl} answers chain id ${answer}, not ${chainId}`);
      }
      return true;
    } catch (error) {
      if (!(error instanceof TypeError)) throw error; // TypeError: not accepting connections yet
    }
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  return false;
}

/**
 * The bound on a start or a stop: SIGKILL for the process if it is still
 * there after `ms`. `fired` says whether it came to that; `cancel` calls it off.
 */
function killAfter(
  process: Deno.ChildProcess,
  ms: number,
): { readonly fired: boolean; cancel(): void } {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    killQuietly(process, "SIGKILL");
  }, ms);
  return {
    get fired() {
      return fired;
    },
    cancel: () => clearTimeout(timer),
  };
}

function killQuietly(process: Deno.ChildProcess, signal: Deno.Signal): void {
  try {
    process.kill(signal);
  } catch { /* already exited */ }
}

async function drain(stream: ReadableStream<Uint8Array>, onText: (text: string) => void) {
  // A TextDecoder rather than a TextDecoderStream: the two standard libraries this project is
  // checked against (Deno's, and the DOM's for the web page) type the stream differently.
  const decoder = new TextDecoder();
  for await (const bytes of stream) onText(decoder.decode(bytes, { stream: true }));
}

/** The last OUTPUT_TAIL_CHARS characters of a process's output. */
class OutputTail {
  #text = "";
  append(text: string): void {
    this.#text = (this.#text + text).slice(-OUTPUT_TAIL_CHARS);
  }
  text(): string {
    return this.#text;
  }
}

// ---------------------------------------------------------------------------
// JSON-RPC

/**
 * One JSON-RPC call over fetch, the way the server reads the chain: the
 * result, or an error carrying the node's error message.
 */
export async function jsonRpc(rpcUrl: string, method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method}: HTTP ${response.status} ${text}`);
  const body = JSON.parse(text) as { result?: unknown; error?: { message?: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message ?? JSON.stringify(body.error)}`);
  return body.result;
}

/** A day back from now, in seconds: a genesis time whose blocks all fall on an earlier UTC day. */
export function aDayAgoSeconds(): number {
  return Math.floor(Date.now() / 1000) - 86_400;
}

/**
 * Moves the chain's clock to the wall clock and mines a block there: on a
 * chain started a day back, the first block of today. What was set up before
 * it (tokens minted) is then how every wallet began the day.
 */
export async function catchUpToNow(chain: ChainEndpoint): Promise<void> {
  await jsonRpc(chain.rpcUrl, "evm_setTime", [Math.floor(Date.now() / 1000)]);
  await jsonRpc(chain.rpcUrl, "evm_mine", []);
}

// ---------------------------------------------------------------------------
// Test USD Coin

/** The committed build of test_usdc.sol (scripts/testnet/build_test_usdc.ts). */
export const TEST_USDC = testUsdcArtifact as unknown as TestUsdcArtifact;

/** Test USD Coin at one address; amounts are in units (1 tUSDC = 10^6 units). */
export interface TestUsdc {
  /** EIP-55 checksummed. */
  readonly address: Address;
  /** The account that deployed the token, the only one that can mint. */
  readonly owner: Address;
  decimals(): Promise<number>;
  balanceOf(holder: Address): Promise<bigint>;
  /** Mints as the owner; resolves once the transaction is mined and succeeded. */
  mint(to: Address, amountUnits: bigint): Promise<void>;
  /** Transfers from the key's account; resolves once mined and succeeded. */
  transfer(fromPrivateKey: Hex, to: Address, amountUnits: bigint): Promise<void>;
}

export interface TestUsdcOptions {
  /** Deploys and mints as this key's account (default: anvil's first dev account). */
  ownerPrivateKey?: Hex;
}

/** Deploys a new Test USD Coin, owned by `ownerPrivateKey`'s account. */
export async function deployTestUsdc(
  chain: ChainEndpoint,
  options: TestUsdcOptions = {},
): Promise<TestUsdc> {
  const ownerPrivateKey = options.ownerPrivateKey ?? devAccounts()[0].privateKey;
  const { publicClient, walletClient } = clients(chain, ownerPrivateKey);
  const hash = await walletClient.deployContract({
    abi: TEST_USDC.abi,
    bytecode: TEST_USDC.bytecode,
  });
  const receipt = await minedSuccessfully(publicClient, hash, "deploying Test USD Coin");
  if (!receipt.contractAddress) throw new Error(`deployment ${hash} created no contract`);
  return testUsdcAt(chain, receipt.contractAddress, { ownerPrivateKey });
}

/** The Test USD Coin already deployed at `address` (e.g. on a chain loaded from a state file). */
export function testUsdcAt(
  chain: ChainEndpoint,
  address: Address,
  options: TestUsdcOptions = {},
): TestUsdc {
  const ownerPrivateKey = options.ownerPrivateKey ?? devAccounts()[0].privateKey;
  const { publicClient } = clients(chain, ownerPrivateKey);
  const token = { address: getAddress(address), abi: TEST_USDC.abi } as const;
  const write = async (fromPrivateKey: Hex, functionName: string, args: unknown[]) => {
    const { walletClient } = clients(chain, fromPrivateKey);
    const hash = await walletClient.writeContract({ ...token, functionName, args });
    await minedSuccessfully(publicClient, hash, `${functionName}(${args.join(", ")})`);
  };
  return {
    address: token.address,
    owner: privateKeyToAccount(ownerPrivateKey).address,
    async decimals() {
      return Number(await publicClient.readContract({ ...token, functionName: "decimals" }));
    },
    async balanceOf(holder) {
      const args = [holder];
      return await publicClient.readContract({
        ...token,
        functionName: "balanceOf",
        args,
      }) as bigint;
    },
    mint: (to, amountUnits) => write(ownerPrivateKey, "mint", [to, amountUnits]),
    transfer: (fromPrivateKey, to, amountUnits) =>
      write(fromPrivateKey, "transfer", [to, amountUnits]),
  };
}

/** Whole or decimal tUSDC to units: usdc(1.5) is 1_500_000n. More than 6 decimals is an error. */
export function usdc(amount: number): bigint {
  const fixed = amount.toFixed(USDC_DECIMALS);
  if (!Number.isFinite(amount) || amount < 0 || fixed.includes("e") || Number(fixed) !== amount) {
    throw new RangeError(`usdc(${amount}): not an amount >= 0 with at most 6 decimals`);
  }
  return parseUnits(fixed, USDC_DECIMALS);
}

/** Units to a decimal tUSDC string: formatUsdc(1_500_000n) is "1.5". */
export function formatUsdc(units: bigint): string {
  return formatUnits(units, USDC_DECIMALS);
}

function clients(chain: ChainEndpoint, privateKey: Hex) {
  const viemChain = defineChain({
    id: chain.chainId,
    name: `Local chain ${chain.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const transport = http(chain.rpcUrl);
  // anvil mines each transaction at once: poll for receipts often rather than every 4 s.
  const publicClient = createPublicClient({ chain: viemChain, transport, pollingInterval: 50 });
  const walletClient = createWalletClient({
    chain: viemChain,
    transport,
    account: privateKeyToAccount(privateKey),
  });
  return { publicClient, walletClient };
}

async function minedSuccessfully(publicClient: PublicClient, hash: Hash, what: string) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
  if (receipt.status !== "success") throw new Error(`${what}: transaction ${hash} reverted`);
  return receipt;
}
