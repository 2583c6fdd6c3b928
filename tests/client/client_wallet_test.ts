/**
 * Wallet sign-in from the client's side, end to end and without mocks: a real
 * anvil chain with the Test USD Coin contract, the real server with a wallet
 * tier reading balances from it, and both client paths signing with anvil's
 * (public) dev keys: the SDK's signInWithWallet (src/client/sdk/wallet.ts) and
 * `storage wallet login`, run as users run it (`deno task cli`, so with the
 * task's permissions). The token either gives must then work as an ordinary
 * token: uploads in the wallet tier, capped at balance × bytes per USDC.
 */
import { privateKeyToAccount } from "viem/accounts";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { deployTestUsdc, startAnvil, usdc } from "../helpers/anvil.ts";
import { startTestServer } from "../helpers/server.ts";
import { TEST_CHAIN_ID, walletArgs } from "../helpers/wallet.ts";
import { StorageClient, StorageError } from "../../src/client/sdk/mod.ts";
import type { PieceUploadResponse } from "../../src/client/sdk/mod.ts";
import { signInWithWallet } from "../../src/client/sdk/wallet.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/**
 * A wallet-tier server at 1 KiB a day per USDC (so 2 USDC is a 2048-byte
 * cap), and a dev account holding `balance` USDC on its chain.
 */
async function walletTier(balance: number) {
  await using stack = new AsyncDisposableStack();
  const anvil = stack.use(await startAnvil());
  const usdcToken = await deployTestUsdc(anvil);
  const holder = anvil.accounts[1];
  await usdcToken.mint(holder.address, usdc(balance));
  const server = stack.use(
    await startTestServer({
      args: walletArgs(anvil.rpcUrl, usdcToken.address, ["--wallet-bytes-per-usdc", "1KiB"]),
    }),
  );
  const owned = stack.move();
  return { server, holder, [Symbol.asyncDispose]: () => owned.disposeAsync() };
}

/** What the promise rejected with (null if it resolved), for asserting on a StorageError. */
function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => null, (error) => error);
}

function assertStorageError(error: unknown, status: number, code: string) {
  assertOk(error instanceof StorageError, `expected StorageError ${code}, got ${error}`);
  assertEquals([error.status, error.code], [status, code], error.message);
}

Deno.test("client wallet: signInWithWallet gives a wallet-tier token that StorageClient uploads with", async () => {
  await using tier = await walletTier(2);
  const { server, holder } = tier;
  const account = privateKeyToAccount(holder.privateKey);

  const signedIn = await signInWithWallet({ server: `${server.url}/`, account });
  assertMatch(signedIn.token, /^pk_live_/);
  assertEquals(signedIn.wallet, holder.address, "EIP-55");
  assertOk(Date.parse(signedIn.expiresAt) > Date.now() + 23 * 3600_000, "valid for 24 h");

  // The answers the uploads got, as the server sent them (UploadResult has no owner).
  const answers: PieceUploadResponse[] = [];
  using client = new StorageClient({
    server: server.url,
    token: signedIn.token,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === "POST" && response.ok) answers.push(await response.clone().json());
      return response;
    },
  });
  const uploaded = await client.upload(crypto.getRandomValues(new Uint8Array(1000)), {
    filename: "wallet.bin",
  });
  assertEquals(answers.map((a) => [a.cid, a.owner, a.sponsored]), [
    [uploaded.cid, holder.address, false],
  ]);

  const limits = await client.limits();
  assertEquals(limits.tier, "wallet");
  assertEquals(limits.wallet?.address, holder.address);
  assertEquals(limits.wallet?.usdcBalance, "2");
  assertEquals([limits.dailyCapBytes, limits.remainingTodayBytes], [2048, 1048]);

  const overCap = await rejection(client.upload(crypto.getRandomValues(new Uint8Array(1100))));
  assertStorageError(overCap, 429, "quota_exceeded");

  // A message for another chain than the server's is refused, and the SDK says which check failed.
  const wrongChain = await rejection(signInWithWallet({ server: server.url, account, chainId: 1 }));
  assertStorageError(wrongChain, 401, "invalid_signature");
  assertMatch((wrongChain as Error).message, new RegExp(`chain id must be ${TEST_CHAIN_ID}`));
});

Deno.test("client wallet: a server without a wallet tier is wallet_unavailable, from /healthz or the server", async () => {
  await using server = await startTestServer();
  const account = privateKeyToAccount(`0x${"11".repeat(32)}`);

  // Without chainId the SDK reads /healthz, which reports no wallet tier: no nonce is asked for.
  const fromHealth = await rejection(signInWithWallet({ server: server.url, account }));
  assertStorageError(fromHealth, 503, "wallet_unavailable");
  assertMatch((fromHealth as Error).message, /has no wallet tier/);
  const nonceRequests = () =>
    server.logs.filter((l) => l.msg === "request" && l.route === "/api/auth/wallet/nonce");
  assertEquals(nonceRequests().length, 0);

  // With chainId it goes straight to the nonce, which the server refuses.
  const fromServer = await rejection(
    signInWithWallet({
      server: server.url,
      account,
      chainId: TEST_CHAIN_ID,
      retry: { attempts: 1 },
    }),
  );
  assertStorageError(fromServer, 503, "wallet_unavailable");
  assertEquals(nonceRequests().length, 1);
});

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `deno task cli …` from the repository root, as a user runs it: the task's
 * permissions, and no STORAGE_* of the outer shell.
 */
async function storageCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cli", ...args],
    cwd: ROOT,
    env: {
      // The task runs the CLI from INIT_CWD, which deno task only sets when it is unset.
      INIT_CWD: ROOT,
      NO_COLOR: "1",
      STORAGE_URL: "",
      STORAGE_TOKEN: "",
      STORAGE_WALLET_KEY: "",
      ...env,
    },
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

function assertExit(run: CliRun, code: number, stderr: RegExp) {
  assertEquals(run.code, code, `exit status; stderr:\n${run.stderr}`);
  assertMatch(run.stderr, stderr);
}

Deno.test("client wallet: `storage wallet login` prints a token that `storage limits` shows in the wallet tier", async () => {
  await using tier = await walletTier(2);
  const { server, holder } = tier;
  const env = { STORAGE_URL: server.url, STORAGE_WALLET_KEY: holder.privateKey };

  const login = await storageCli(["wallet", "login"], env);
  assertExit(login, 0, /^$/);
  const lines = login.stdout.trimEnd().split("\n");
  assertMatch(lines[0], /^pk_live_\S+$/);
  assertOk(lines.includes("  export STORAGE_TOKEN=<the token above>"), login.stdout);
  assertMatch(login.stdout, new RegExp(`^${holder.address}: wallet tier \\(`, "m"));
  assertMatch(lines.at(-1)!, /^token id \(jti, to revoke it\): \S+$/);
  assertEquals(login.stdout.includes(holder.privateKey.slice(2)), false, "the key is not printed");

  const limits = await storageCli(["limits"], { STORAGE_URL: server.url, STORAGE_TOKEN: lines[0] });
  assertExit(limits, 0, /^$/);
  assertMatch(limits.stdout, /^tier: wallet$/m);
  assertMatch(limits.stdout, new RegExp(`^wallet: ${holder.address}, 2 USDC`, "m"));

  const json = await storageCli(
    ["wallet", "login", "--chain-id", String(TEST_CHAIN_ID), "--json"],
    env,
  );
  assertExit(json, 0, /^$/);
  const result = JSON.parse(json.stdout);
  assertEquals(result.wallet, holder.address);
  assertMatch(result.token, /^pk_live_/);
  assertOk(!lines.at(-1)!.endsWith(result.jti), "a new token each time");
});

Deno.test("client wallet: `storage wallet login` refuses a missing, malformed or command-line key with exit 2", async () => {
  const key = `0x${"ab".repeat(32)}`;
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["wallet", "login"], {}, /^error: STORAGE_WALLET_KEY is not set: /],
    [["wallet", "login"], { STORAGE_WALLET_KEY: "0xabc" }, /^error: STORAGE_WALLET_KEY must be /],
    [["wallet", "login"], { STORAGE_WALLET_KEY: `0x${"f".repeat(64)}` }, /is not a valid/],
    [["wallet", "login", key], {}, /only, not from arguments: /],
    [["wallet", "login", `--private-key=${key}`], {}, /only, not from --private-key: /],
    [["wallet"], {}, /^error: "wallet" needs "login"/],
  ];
  for (const [args, env, line] of cases) {
    const run = await storageCli(args, env);
    assertExit(run, 2, line);
    assertEquals(run.stderr.trimEnd().split("\n").length, 1, `one line:\n${run.stderr}`);
    assertEquals(run.stdout, "");
    for (const secret of [key, env.STORAGE_WALLET_KEY ?? key]) {
      assertEquals(run.stderr.includes(secret.slice(2)), false, `no key in ${run.stderr}`);
    }
  }
});
