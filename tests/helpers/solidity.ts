/**
 * The rebuild check of a committed contract artifact, for tests: compile the
 * source now and fail, naming the command that rebuilds it, when the
 * committed JSON is not what it builds to.
 */
import {
  artifactMatches,
  compileContract,
  readCommittedArtifact,
} from "../../scripts/testnet/solidity_build.ts";
import type { SolidityContract } from "../../scripts/testnet/solidity_build.ts";
import { assertOk } from "./assert.ts";

export async function builtFromSource(contract: SolidityContract): Promise<void> {
  const fresh = await compileContract(contract);
  assertOk(
    artifactMatches(await readCommittedArtifact(contract), fresh),
    `${contract.artifactUrl.pathname} differs from a fresh build of ${contract.sourceName}: run ` +
      `\`${contract.buildCommand}\` and commit`,
  );
}
