/**
 * Sign-In with Ethereum by a smart-contract wallet (ERC-1271), against a real
 * chain: no key recovers to a contract's address, so the server must ask the
 * contract itself over the RPC whether its owner's signature speaks for it.
 * anvil runs the test wallet built from fixtures/contract_wallet, the real
 * server signs it in, caps it by the contract's own tUSDC balance and records
 * its uploads under the contract's address; a stranger's key is refused, and
 * with the chain gone a contract cannot sign in (503) while a key still can.
 */
import {
  type Address,
  concat,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  hexToBigInt,
  http,
  numberToHex,
  parseSignature,
  slice,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { CONTRACT_WALLET as CONTRACT_WALLET_BUILD } from "../fixtures/contract_wallet/build.ts";
import type { ContractWalletArtifact } from "../fixtures/contract_wallet/build.ts";
import { builtFromSource } from "../helpers/solidity.ts";
import contractWalletJson from "../fixtures/contract_wallet/contract_wallet.json" with {
  type: "json",
};
import { type Anvil, deployTestUsdc, type DevAccount, startAnvil, usdc } from "../helpers/anvil.ts";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { bearer, errorOf, startTestServer, type TestServer } from "../helpers/server.ts";
import { devKey, postSignIn, signedMessage, walletArgs, walletSignIn } from "../helpers/wallet.ts";

const CONTRACT_WALLET = contractWalletJson as unknown as ContractWalletArtifact;
/** ERC-1271's answers. */
const ERC1271_VALID = "0x1626ba7e";
const ERC1271_INVALID = "0xffffffff";
/** secp256k1's group order: n - s is the malleable twin of s. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const OWNER = 3;
const STRANGER = 4;
const KEY_HOLDER = 1;

Deno.test("wallet contract: contract_wallet.json is what contract_wallet.sol builds to", async () => {
  await builtFromSource(CONTRACT_WALLET_BUILD);
});

/** A viem wallet client for a dev key on anvil, and a public client that sees receipts at once. */
function clientsFor(anvil: Anvil, privateKey: Hex) {
  const chain = { ...foundry, id: anvil.chainId };
  const transport = http(anvil.rpcUrl);
  return {
    publicClient: createPublicClient({ chain, transport, pollingInterval: 50 }),
    walletClient: createWalletClient({
      chain,
      transport,
      account: privateKeyToAccount(privateKey),
    }),
  };
}

/** Deploys the test wallet from its owner's account; resolves to its (EIP-55) address once mined. */
async function deployContractWallet(anvil: Anvil, owner: DevAccount): Promise<Address> {
  const { publicClient, walletClient } = clientsFor(anvil, owner.privateKey);
  const hash = await walletClient.deployContract({
    abi: CONTRACT_WALLET.abi,
    bytecode: CONTRACT_WALLET.bytecode,
    args: [owner.address],
  });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
  assertEquals(receipt.status, "success", `deploying the contract wallet: ${hash}`);
  assertOk(receipt.contractAddress, `deployment ${hash} created no contract`);
  return getAddress(receipt.contractAddress);
}

interface ContractWalletWorld extends AsyncDisposable {
  anvil: Anvil;
  server: TestServer;
  /** The deployed contract wallet, holding 2 tUSDC. */
  wallet: Address;
  owner: DevAccount;
}

/**
 * anvil with Test USD Coin and a contract wallet owned by dev account 3,
 * funded with 2 tUSDC, and a wallet-tier server at 1 KiB a day per tUSDC.
 */
async function contractWalletWorld(): Promise<ContractWalletWorld> {
  await using resources = new AsyncDisposableStack();
  const anvil = resources.use(await startAnvil());
  const owner = anvil.accounts[OWNER];
  const wallet = await deployContractWallet(anvil, owner);
  const usdcToken = await deployTestUsdc(anvil);
  await usdcToken.mint(wallet, usdc(2));
  const server = resources.use(
    await startTestServer({
      args: walletArgs(anvil.rpcUrl, usdcToken.address, ["--wallet-bytes-per-usdc", "1KiB"]),
    }),
  );
  const owned = resources.move();
  return { anvil, server, wallet, owner, [Symbol.asyncDispose]: () => owned.disposeAsync() };
}

/** A SIWE message whose address is the contract wallet's, signed with `signerKey`. */
async function signedForContract(server: TestServer, wallet: Address, signerKey: Hex) {
  const { message, signature } = await signedMessage(server.url, signerKey, {
    overrides: { address: wallet },
  });
  return { message, signature };
}

/** POST /api/auth/wallet with the message signed for the contract; status and JSON body. */
async function signInAsContract(server: TestServer, wallet: Address, signerKey: Hex) {
  const response = await postSignIn(server.url, await signedForContract(server, wallet, signerKey));
  return { status: response.status, body: await response.json() };
}

Deno.test("wallet contract: isValidSignature accepts only the owner's canonical signature, and never reverts", async () => {
  await using anvil = await startAnvil();
  const owner = anvil.accounts[OWNER];
  const wallet = await deployContractWallet(anvil, owner);
  const { publicClient } = clientsFor(anvil, owner.privateKey);
  const hash = `0x${"ab".repeat(32)}` as Hex;
  const answer = (signature: Hex) =>
    publicClient.readContract({
      address: wallet,
      abi: CONTRACT_WALLET.abi,
      functionName: "isValidSignature",
      args: [hash, signature],
    });
  const signedBy = (privateKey: Hex) => privateKeyToAccount(privateKey).sign({ hash });

  const good = await signedBy(owner.privateKey);
  assertEquals(await answer(good), ERC1271_VALID);
  const { r, s, yParity } = parseSignature(good);
  const withSV = (sValue: bigint, v: number) =>
    concat([r, numberToHex(sValue, { size: 32 }), numberToHex(v, { size: 1 })]);
  const refused: Record<string, Hex> = {
    "another key's signature": await signedBy(devKey(STRANGER)),
    "the malleable twin (n - s, the other v)": withSV(SECP256K1_N - hexToBigInt(s), 28 - yParity),
    "v as 0/1 instead of 27/28": withSV(hexToBigInt(s), yParity),
    "v = 29": withSV(hexToBigInt(s), 29),
    "64 bytes": slice(good, 0, 64),
    "66 bytes": concat([good, "0x00"]),
    "no bytes": "0x",
    "r = s = 0": concat([numberToHex(0n, { size: 64 }), "0x1b"]),
  };
  for (const [what, signature] of Object.entries(refused)) {
    assertEquals(await answer(signature), ERC1271_INVALID, what);
  }
});

Deno.test("wallet contract: the owner's key signs in as the contract, capped by the contract's balance", async () => {
  await using world = await contractWalletWorld();
  const { server, wallet, owner } = world;
  const signIn = await signInAsContract(server, wallet, owner.privateKey);
  assertEquals(signIn.status, 201, `contract sign-in refused: ${JSON.stringify(signIn.body)}`);
  assertEquals(signIn.body.wallet, wallet);
  const token = signIn.body.token as string;

  const limitsResponse = await server.get("/api/limits", { headers: bearer(token) });
  const limits = await limitsResponse.json();
  assertEquals(limitsResponse.status, 200, JSON.stringify(limits));
  assertEquals(
    [limits.tier, limits.dailyCapBytes, limits.wallet.address],
    ["wallet", 2048, wallet],
    "2 tUSDC at 1 KiB each, read from the contract's own balance",
  );

  const uploaded = await server.upload("bafkcontractwallet01", "c".repeat(100), {
    contentType: "text/plain",
    headers: bearer(token),
  });
  const deal = await uploaded.json();
  assertEquals(uploaded.status, 200, JSON.stringify(deal));
  assertEquals([deal.size, deal.owner, deal.sponsored], [100, wallet, false]);
});

Deno.test("wallet contract: a signature by a key that is not the owner's is 401 invalid_signature", async () => {
  await using world = await contractWalletWorld();
  const { server, wallet } = world;
  const response = await postSignIn(
    server.url,
    await signedForContract(server, wallet, devKey(STRANGER)),
  );
  const error = await errorOf(response);
  assertEquals([response.status, error.error], [401, "invalid_signature"], error.message);
});

/** A contract sign-in with the chain down: 503 wallet_unavailable (retry shortly), not a refusal. */
async function assertContractSignInUnavailable(world: ContractWalletWorld, diagnosis = "") {
  const { server, wallet, owner } = world;
  const response = await postSignIn(
    server.url,
    await signedForContract(server, wallet, owner.privateKey),
  );
  const error = await errorOf(response);
  assertEquals(
    [response.status, error.error],
    [503, "wallet_unavailable"],
    "a contract's signature can only be checked on the chain, which is down: expected 503 " +
      `wallet_unavailable, got ${response.status} ${JSON.stringify(error)}${diagnosis}`,
  );
  assertEquals(response.headers.get("retry-after"), "5");
}

Deno.test("wallet contract: chain down → contract sign-in 503, a key's still 201; chain back → the contract's 201", async () => {
  await using world = await contractWalletWorld();
  const { anvil, server, wallet, owner } = world;
  await anvil.stop();
  await assertContractSignInUnavailable(world);
  // A key's signature is checked locally: no chain needed.
  const keyHolder = anvil.accounts[KEY_HOLDER];
  assertEquals((await walletSignIn(server.url, keyHolder.privateKey)).wallet, keyHolder.address);

  await anvil.start();
  const after = await signInAsContract(server, wallet, owner.privateKey);
  assertEquals([after.status, after.body.wallet], [201, wallet], JSON.stringify(after.body));
});

Deno.test("wallet contract: chain down after a contract signed in → contract sign-in is still 503", async () => {
  await using world = await contractWalletWorld();
  const { anvil, server, wallet, owner } = world;
  // The server has verified a contract on the chain before it goes away, as in production.
  const before = await signInAsContract(server, wallet, owner.privateKey);
  assertEquals(before.status, 201, JSON.stringify(before.body));
  await anvil.stop();
  await assertContractSignInUnavailable(
    world,
    ". A server bug, not the test's: once WalletChain has checked the chain id it calls " +
      "viem's publicClient.verifyMessage directly, and viem (actions/public/verifyHash.js, " +
      "verifyErc6492) turns every CallExecutionError of its eth_call, transport failures " +
      "included, into `false`, so src/wallet/chain.ts never sees an unreachable RPC here",
  );
});
