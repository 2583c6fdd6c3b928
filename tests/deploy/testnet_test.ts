/**
 * The local chain that wallet tiers are tested on: the committed Test USD
 * Coin build matches its source, and anvil really runs it — balances set by
 * mint and transfer are what a raw eth_call of balanceOf (the server's read
 * path) returns, also after anvil is stopped and started again.
 */
import { throws } from "node:assert/strict";
import { type Address, decodeFunctionResult, encodeFunctionData, type Hex } from "viem";
import { TEST_USDC_CONTRACT } from "../../scripts/testnet/build_test_usdc.ts";
import { builtFromSource } from "../helpers/solidity.ts";
import { jsonRpc, TEST_USDC, testUsdcAt } from "../../scripts/testnet/chain.ts";
import { deployTestUsdc, startAnvil, usdc } from "../helpers/anvil.ts";
import { assertEquals, assertMatch, assertOk, assertRejects } from "../helpers/assert.ts";

Deno.test("testnet: test_usdc.json is what test_usdc.sol builds to", async () => {
  await builtFromSource(TEST_USDC_CONTRACT);
});

/** decimals() read with a raw eth_call, as the server will. */
async function rawDecimals(rpcUrl: string, token: Address): Promise<number> {
  return Number(await rawCall(rpcUrl, token, "decimals", []));
}

/** balanceOf(holder) read with a raw eth_call, as the server will. */
async function rawBalanceOf(rpcUrl: string, token: Address, holder: Address): Promise<bigint> {
  return await rawCall(rpcUrl, token, "balanceOf", [holder]) as bigint;
}

async function rawCall(rpcUrl: string, to: Address, functionName: string, args: unknown[]) {
  const { abi } = TEST_USDC;
  const data = encodeFunctionData({ abi, functionName, args });
  const result = await jsonRpc(rpcUrl, "eth_call", [{ to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: result as Hex });
}

Deno.test("testnet: anvil on an ephemeral port runs Test USD Coin", async () => {
  await using anvil = await startAnvil();
  assertOk(anvil.port > 0 && anvil.port !== 8545, `ephemeral port, got ${anvil.port}`);
  assertEquals(anvil.rpcUrl, `http://127.0.0.1:${anvil.port}`);
  assertEquals(Number(await jsonRpc(anvil.rpcUrl, "eth_chainId", [])), 31337);
  // The keys the harness derives are those of the accounts anvil funds.
  const nodeAccounts = await jsonRpc(anvil.rpcUrl, "eth_accounts", []) as string[];
  assertEquals(
    nodeAccounts.map((a) => a.toLowerCase()),
    anvil.accounts.map((a) => a.address.toLowerCase()),
  );

  const [, alice, bob] = anvil.accounts;
  const token = await deployTestUsdc(anvil);
  assertEquals(await rawDecimals(anvil.rpcUrl, token.address), 6);
  assertEquals(await token.decimals(), 6);
  assertEquals(await rawBalanceOf(anvil.rpcUrl, token.address, alice.address), 0n);

  await token.mint(alice.address, usdc(100));
  assertEquals(await rawBalanceOf(anvil.rpcUrl, token.address, alice.address), 100_000_000n);

  await token.transfer(alice.privateKey, bob.address, usdc(12.5));
  assertEquals(await rawBalanceOf(anvil.rpcUrl, token.address, alice.address), usdc(87.5));
  assertEquals(await rawBalanceOf(anvil.rpcUrl, token.address, bob.address), usdc(12.5));
  assertEquals(await token.balanceOf(bob.address), usdc(12.5));

  await assertRejects(
    () => token.transfer(bob.privateKey, alice.address, usdc(13)),
    /transfer amount exceeds balance/,
  );
  const asBob = testUsdcAt(anvil, token.address, { ownerPrivateKey: bob.privateKey });
  await assertRejects(() => asBob.mint(bob.address, usdc(1)), /only the owner can mint/);
  assertEquals(await rawBalanceOf(anvil.rpcUrl, token.address, bob.address), usdc(12.5));
});

Deno.test("testnet: anvil stopped refuses connections, started again keeps its chain", async () => {
  await using anvil = await startAnvil({ chainId: 4242 });
  const [, alice, bob] = anvil.accounts;
  const token = await deployTestUsdc(anvil);
  await token.mint(alice.address, usdc(100));
  await token.transfer(alice.privateKey, bob.address, usdc(40));

  await anvil.stop();
  assertEquals(anvil.isRunning, false);
  const refused = await jsonRpc(anvil.rpcUrl, "eth_chainId", []).then(() => null, (e) => e);
  assertOk(refused instanceof TypeError, `fetch fails once stopped, got ${refused}`);
  assertMatch(String(refused.cause), /Connection refused/);

  const { port, rpcUrl } = anvil;
  await anvil.start();
  assertEquals(anvil.isRunning, true);
  assertEquals([anvil.port, anvil.rpcUrl], [port, rpcUrl]);
  assertEquals(Number(await jsonRpc(rpcUrl, "eth_chainId", [])), 4242);
  assertEquals(await rawDecimals(rpcUrl, token.address), 6);
  assertEquals(await rawBalanceOf(rpcUrl, token.address, alice.address), usdc(60));
  assertEquals(await rawBalanceOf(rpcUrl, token.address, bob.address), usdc(40));

  // The chain goes on from where it was: nonces too, so new transactions are accepted.
  await token.transfer(bob.privateKey, alice.address, usdc(0.000001));
  await token.mint(bob.address, usdc(1));
  assertEquals(await token.balanceOf(bob.address), usdc(40.999999));
  assertEquals(await token.balanceOf(alice.address), usdc(60.000001));
});

Deno.test("testnet: usdc() converts whole and decimal amounts to 6-decimal units", () => {
  assertEquals(usdc(0), 0n);
  assertEquals(usdc(1), 1_000_000n);
  assertEquals(usdc(0.1), 100_000n);
  assertEquals(usdc(1234.567891), 1_234_567_891n);
  assertEquals(usdc(1e12), 1_000_000_000_000_000_000n);
  for (const bad of [-1, 0.0000001, 1.0000005, NaN, Infinity]) {
    throws(() => usdc(bad), { name: "RangeError", message: /at most 6 decimals/ });
  }
});
