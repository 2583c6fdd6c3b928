/**
 * Builds test_usdc.json (the ABI and creation bytecode of Test USD Coin) from
 * test_usdc.sol with solc-js from npm, at fixed settings, so the build is
 * deterministic. The artifact is committed, like the WASM kernel of the piece
 * cid code (scripts/build_wasm.sh): tests and scripts/testnet.ts deploy it
 * without compiling, and `--check` (and tests/testnet_test.ts, in-process)
 * recompiles and fails if the committed JSON is not what the source builds to,
 * so the two cannot drift apart.
 *
 *   deno run --allow-read --allow-write scripts/testnet/build_test_usdc.ts [--check]
 */
import { parseArgs } from "node:util";
import { isDeepStrictEqual } from "node:util";
import solc from "solc";
import type { Abi, Hex } from "viem";

const SOURCE_URL = new URL("./test_usdc.sol", import.meta.url);
export const ARTIFACT_URL = new URL("./test_usdc.json", import.meta.url);
/** The name solc knows the source by: fixed, so the build does not depend on the checkout's path. */
const SOURCE_NAME = "test_usdc.sol";
const CONTRACT_NAME = "TestUsdc";
const USAGE =
  "Usage: deno run --allow-read --allow-write scripts/testnet/build_test_usdc.ts [--check]";
const REBUILD_HINT =
  "run `deno run --allow-read --allow-write scripts/testnet/build_test_usdc.ts` and commit";

/** solc's standard-JSON settings, recorded in the artifact next to the compiler that used them. */
export const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  // Pinned rather than the compiler's default, which moves with solc releases; anvil runs newer.
  evmVersion: "cancun",
  // No metadata hash in the bytecode: it then changes only when the code does, not its comments.
  metadata: { bytecodeHash: "none" },
  outputSelection: { [SOURCE_NAME]: { [CONTRACT_NAME]: ["abi", "evm.bytecode.object"] } },
} as const;

export interface TestUsdcArtifact {
  /** solc.version() of the compiler that built it. */
  compiler: string;
  settings: typeof SOLC_SETTINGS;
  abi: Abi;
  /** Creation bytecode, 0x-prefixed. */
  bytecode: Hex;
}

interface SolcMessage {
  severity: "error" | "warning" | "info";
  formattedMessage: string;
}

interface SolcOutput {
  errors?: SolcMessage[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

/** Compiles test_usdc.sol; throws with solc's messages on any error or warning. */
export async function compileTestUsdc(): Promise<TestUsdcArtifact> {
  const input = {
    language: "Solidity",
    sources: { [SOURCE_NAME]: { content: await Deno.readTextFile(SOURCE_URL) } },
    settings: SOLC_SETTINGS,
  };
  const output: SolcOutput = JSON.parse(solc.compile(JSON.stringify(input)));
  // Warnings fail the build too: the token is meant to be read as an example of a clean ERC-20.
  const problems = (output.errors ?? []).filter((m) => m.severity !== "info");
  if (problems.length > 0) {
    throw new Error(
      `solc: ${SOURCE_NAME} did not build cleanly:\n` +
        problems.map((m) => m.formattedMessage).join("\n"),
    );
  }
  const contract = output.contracts?.[SOURCE_NAME]?.[CONTRACT_NAME];
  if (!contract) throw new Error(`solc produced no ${CONTRACT_NAME} from ${SOURCE_NAME}`);
  return {
    compiler: solc.version(),
    settings: SOLC_SETTINGS,
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
  };
}

/** The committed artifact as parsed JSON, or null if there is none. */
export async function readCommittedArtifact(): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(ARTIFACT_URL));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Whether the committed artifact is what the source builds to. Compared as
 * JSON values, not text, so `deno fmt` reformatting the file does not count.
 */
export function artifactMatches(committed: unknown, fresh: TestUsdcArtifact): boolean {
  return isDeepStrictEqual(committed, JSON.parse(JSON.stringify(fresh)));
}

async function main(args: string[]): Promise<number> {
  let check: boolean;
  try {
    ({ values: { check = false } } = parseArgs({
      args,
      options: { check: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    console.error(`error: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const fresh = await compileTestUsdc();
  const path = ARTIFACT_URL.pathname;
  if (check) {
    if (!artifactMatches(await readCommittedArtifact(), fresh)) {
      console.error(`${path} is not what test_usdc.sol builds to: ${REBUILD_HINT}`);
      return 1;
    }
    console.log(`test_usdc.json rebuilt identically (${fresh.compiler})`);
    return 0;
  }
  await Deno.writeTextFile(ARTIFACT_URL, JSON.stringify(fresh, null, 2) + "\n");
  console.log(
    `built ${path} (${(fresh.bytecode.length - 2) / 2} bytes of bytecode, ${fresh.compiler})`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
