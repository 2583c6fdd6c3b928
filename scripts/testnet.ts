/**
 * A local chain to try wallet tiers on, without a real network or real money:
 * starts anvil, deploys Test USD Coin (a 6-decimal USDC stand-in), mints some
 * to the given addresses, and prints the server flags that point at it. Runs
 * until Ctrl-C (SIGINT) or SIGTERM, then stops anvil; the chain is not kept.
 *
 *   deno run -A scripts/testnet.ts [--port 8545] [--chain-id 31337] [--mint 100]
 *                                  [--fund 0xADDRESS]...
 */
import { parseArgs } from "node:util";
import { type Address, getAddress, isAddress } from "viem";
import { usageExit } from "./lib/args.ts";
import {
  aDayAgoSeconds,
  ANVIL_VERSION,
  catchUpToNow,
  DEFAULT_CHAIN_ID,
  deployTestUsdc,
  devAccounts,
  formatUsdc,
  spawnAnvil,
  usdc,
} from "./testnet/chain.ts";

const USAGE = `Usage: deno run -A scripts/testnet.ts [options]

  --port N           port on 127.0.0.1 (default 8545; 0 picks a free one)
  --chain-id N       chain id (default ${DEFAULT_CHAIN_ID})
  --mint AMOUNT      tUSDC minted to each funded address (default 100; up to 6 decimals)
  --fund 0xADDRESS   an address to fund; repeatable (default: anvil's first 3 dev accounts)`;

const DEFAULT_FUNDED = 3;

interface TestnetOptions {
  port: number;
  chainId: number;
  mintUnits: bigint;
  fund: Address[];
}

function parseOptions(args: string[]): TestnetOptions {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        port: { type: "string", default: "8545" },
        "chain-id": { type: "string", default: String(DEFAULT_CHAIN_ID) },
        mint: { type: "string", default: "100" },
        fund: { type: "string", multiple: true, default: [] },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    usageExit(USAGE, (error as Error).message.split("\n")[0]);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    usageExit(USAGE, `--port must be a whole number from 0 to 65535, got "${values.port}"`);
  }
  const chainId = Number(values["chain-id"]);
  if (!Number.isSafeInteger(chainId) || chainId < 1) {
    usageExit(USAGE, `--chain-id must be a whole number >= 1, got "${values["chain-id"]}"`);
  }
  let mintUnits: bigint;
  try {
    mintUnits = usdc(values.mint.trim() === "" ? NaN : Number(values.mint));
  } catch {
    usageExit(USAGE, `--mint must be an amount >= 0 with at most 6 decimals, got "${values.mint}"`);
  }
  for (const address of values.fund) {
    if (!isAddress(address, { strict: false })) {
      usageExit(USAGE, `--fund must be a 0x address, got "${address}"`);
    }
  }
  const fund = values.fund.length > 0
    ? values.fund.map((address) => getAddress(address))
    : devAccounts().slice(0, DEFAULT_FUNDED).map((account) => account.address);
  return { port, chainId, mintUnits, fund };
}

async function main(): Promise<number> {
  const options = parseOptions(Deno.args);
  const signalled = Promise.withResolvers<Deno.Signal>();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => signalled.resolve(signal));
  }
  // Funded "yesterday": a wallet's daily cap follows the smaller of its balance now and as the
  // UTC day began, so coins minted today would buy nothing until tomorrow.
  const node = await spawnAnvil({
    port: options.port,
    chainId: options.chainId,
    genesisTimestamp: aDayAgoSeconds(),
  });
  try {
    const token = await deployTestUsdc(node);
    for (const address of options.fund) await token.mint(address, options.mintUnits);
    await catchUpToNow(node);
    const balances = await Promise.all(options.fund.map((address) => token.balanceOf(address)));
    const devKeys = new Map(devAccounts().map((a) => [a.address, a.privateKey]));

    console.log(`anvil ${ANVIL_VERSION} with Test USD Coin (tUSDC, 6 decimals; not money)
  RPC URL:   ${node.rpcUrl}
  chain id:  ${node.chainId}
  token:     ${token.address} (owner ${token.owner}, anvil's first dev account)
  funded:`);
    options.fund.forEach((address, i) => {
      const key = devKeys.get(address);
      const note = key ? `  (dev account, private key ${key})` : "";
      console.log(`    ${address}  ${formatUsdc(balances[i])} tUSDC${note}`);
    });
    if (options.fund.some((address) => devKeys.has(address))) {
      console.log("  Dev account keys are public test keys: use them on this chain only.");
    }
    console.log(`
Server flags:
  --wallet-rpc-url ${node.rpcUrl} --wallet-chain-id ${node.chainId} --wallet-usdc-address ${token.address}

Ctrl-C stops the chain.`);

    const ended = await Promise.race([
      signalled.promise,
      node.exited.then((status) => status),
    ]);
    if (typeof ended === "string") {
      console.log(`\n${ended}: stopping anvil`);
      return 0;
    }
    // A Ctrl-C reaches anvil too (same process group), which then exits 0 by itself.
    if (ended.success) return 0;
    console.error(`anvil exited (${ended.code}):\n${node.output()}`);
    return 1;
  } finally {
    await node.stop();
  }
}

if (import.meta.main) Deno.exit(await main());
