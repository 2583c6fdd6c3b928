/**
 * Builds a contract's committed artifact (ABI and creation bytecode) from its
 * Solidity source with solc-js from npm, at fixed settings, so the build is
 * deterministic; and checks a committed artifact against a fresh build. The
 * artifacts are committed like the WASM kernel of the piece cid code
 * (scripts/build_wasm.sh): tests and scripts deploy them without compiling,
 * and a rebuild check fails when source and artifact drift apart.
 */
import { isDeepStrictEqual } from "node:util";
import { scriptArgs } from "../lib/args.ts";
import solc from "solc";
import type { Abi, Hex } from "viem";

/** One contract and where its source and committed artifact live. */
export interface SolidityContract {
  sourceUrl: URL;
  /** The name solc knows the source by: fixed, so the build does not depend on the path. */
  sourceName: string;
  contractName: string;
  artifactUrl: URL;
  /** The command that rebuilds the artifact, for messages. */
  buildCommand: string;
}

export interface SolidityArtifact {
  /** solc.version() of the compiler that built it. */
  compiler: string;
  settings: ReturnType<typeof solcSettings>;
  abi: Abi;
  /** Creation bytecode, 0x-prefixed. */
  bytecode: Hex;
}

/** solc's standard-JSON settings, recorded in the artifact next to the compiler that used them. */
export function solcSettings(contract: Pick<SolidityContract, "sourceName" | "contractName">) {
  return {
    optimizer: { enabled: true, runs: 200 },
    // Pinned rather than the compiler's default, which moves with solc releases; anvil runs newer.
    evmVersion: "cancun",
    // No metadata hash in the bytecode: it then changes only when the code does, not its comments.
    metadata: { bytecodeHash: "none" },
    outputSelection: {
      [contract.sourceName]: { [contract.contractName]: ["abi", "evm.bytecode.object"] },
    },
  } as const;
}

interface SolcOutput {
  errors?: { severity: "error" | "warning" | "info"; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

/** Compiles the contract; throws with solc's messages on any error or warning. */
export async function compileContract(contract: SolidityContract): Promise<SolidityArtifact> {
  const { sourceName, contractName } = contract;
  const settings = solcSettings(contract);
  const input = {
    language: "Solidity",
    sources: { [sourceName]: { content: await Deno.readTextFile(contract.sourceUrl) } },
    settings,
  };
  const output: SolcOutput = JSON.parse(solc.compile(JSON.stringify(input)));
  // Warnings fail the build too: these contracts are meant to be read as clean examples.
  const problems = (output.errors ?? []).filter((m) => m.severity !== "info");
  if (problems.length > 0) {
    throw new Error(
      `solc: ${sourceName} did not build cleanly:\n` +
        problems.map((m) => m.formattedMessage).join("\n"),
    );
  }
  const built = output.contracts?.[sourceName]?.[contractName];
  if (!built) throw new Error(`solc produced no ${contractName} from ${sourceName}`);
  return {
    compiler: solc.version(),
    settings,
    abi: built.abi,
    bytecode: `0x${built.evm.bytecode.object}`,
  };
}

/** The committed artifact as parsed JSON, or null if there is none. */
export async function readCommittedArtifact(contract: SolidityContract): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(contract.artifactUrl));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Whether the committed artifact is what the source builds to. Compared as
 * JSON values, not text, so `deno fmt` reformatting the file does not count.
 */
export function artifactMatches(committed: unknown, fresh: SolidityArtifact): boolean {
  return isDeepStrictEqual(committed, JSON.parse(JSON.stringify(fresh)));
}

/** The build command: writes the artifact, or with --check exits 1 when it has drifted. */
export async function buildCommand(contract: SolidityContract, args: string[]): Promise<number> {
  const usage = `Usage: ${contract.buildCommand} [--check]`;
  const { check } = scriptArgs(usage, { check: { type: "boolean" } }, args);
  const fresh = await compileContract(contract);
  const path = contract.artifactUrl.pathname;
  if (check) {
    if (!artifactMatches(await readCommittedArtifact(contract), fresh)) {
      console.error(
        `${path} is not what ${contract.sourceName} builds to: run \`${contract.buildCommand}\` ` +
          "and commit",
      );
      return 1;
    }
    console.log(`${contract.sourceName} rebuilt identically (${fresh.compiler})`);
    return 0;
  }
  await Deno.writeTextFile(contract.artifactUrl, JSON.stringify(fresh, null, 2) + "\n");
  console.log(
    `built ${path} (${(fresh.bytecode.length - 2) / 2} bytes of bytecode, ${fresh.compiler})`,
  );
  return 0;
}
