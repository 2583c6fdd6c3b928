/**
 * Builds test_usdc.json (the ABI and creation bytecode of Test USD Coin) from
 * test_usdc.sol (solidity_build.ts has the how). Tests and scripts/testnet.ts
 * deploy the committed artifact without compiling; `--check` (and
 * tests/deploy/testnet_test.ts, in-process) fails if it is not what the source
 * builds to.
 *
 *   deno run --allow-read --allow-write scripts/testnet/build_test_usdc.ts [--check]
 */
import { buildCommand } from "./solidity_build.ts";
import type { SolidityArtifact, SolidityContract } from "./solidity_build.ts";

export const TEST_USDC_CONTRACT: SolidityContract = {
  sourceUrl: new URL("./test_usdc.sol", import.meta.url),
  sourceName: "test_usdc.sol",
  contractName: "TestUsdc",
  artifactUrl: new URL("./test_usdc.json", import.meta.url),
  buildCommand: "deno run --allow-read --allow-write scripts/testnet/build_test_usdc.ts",
};

export type TestUsdcArtifact = SolidityArtifact;

if (import.meta.main) Deno.exit(await buildCommand(TEST_USDC_CONTRACT, Deno.args));
