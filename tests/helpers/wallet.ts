/**
 * Signing in as a wallet, the way a client does: a nonce from the server, an
 * EIP-4361 message built by viem's createSiweMessage for that server, signed
 * with a real private key (anvil's public dev keys). Tests that need a wrong
 * message change one field through `overrides` and keep everything else right.
 */
import { createSiweMessage } from "viem/siwe";
import type { SiweMessage } from "viem/siwe";
import { privateKeyToAccount } from "viem/accounts";
import type { Hex } from "viem";
import { devAccounts } from "../../scripts/testnet/chain.ts";
import { assertEquals } from "./assert.ts";

/** The chain id the wallet tests configure (anvil's default). */
export const TEST_CHAIN_ID = 31337;
/** Any contract address will do where no balance is ever read. */
export const SOME_TOKEN_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/** Flags that give a server a wallet tier on the chain at rpcUrl. */
export function walletArgs(rpcUrl: string, usdcAddress = SOME_TOKEN_ADDRESS, extra: string[] = []) {
  return [
    "--wallet-rpc-url",
    rpcUrl,
    "--wallet-chain-id",
    String(TEST_CHAIN_ID),
    "--wallet-usdc-address",
    usdcAddress,
    ...extra,
  ];
}

/** An RPC URL nothing listens on: a port taken from the OS and given back at once. */
export function deadRpcUrl(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return `http://127.0.0.1:${port}`;
}

/** The private key of anvil's dev account `index`. */
export function devKey(index: number): Hex {
  return devAccounts()[index].privateKey;
}

export async function fetchNonce(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/auth/wallet/nonce`);
  const body = await response.json();
  assertEquals(response.status, 200, JSON.stringify(body));
  return body.nonce;
}

export interface SignedMessage {
  message: string;
  signature: Hex;
  address: string;
}

/**
 * A SIWE message for the server at baseUrl, signed by privateKey. The nonce
 * is fetched unless given; any field can be overridden to make it wrong.
 */
export async function signedMessage(
  baseUrl: string,
  privateKey: Hex,
  options: { nonce?: string; now?: Date; overrides?: Partial<SiweMessage> } = {},
): Promise<SignedMessage> {
  const account = privateKeyToAccount(privateKey);
  const now = options.now ?? new Date();
  const message = createSiweMessage({
    address: account.address,
    domain: new URL(baseUrl).host,
    uri: baseUrl,
    version: "1",
    chainId: TEST_CHAIN_ID,
    nonce: options.nonce ?? await fetchNonce(baseUrl),
    issuedAt: now,
    expirationTime: new Date(now.getTime() + 5 * 60_000),
    statement: "Sign in to the storage staging service",
    ...options.overrides,
  });
  return { message, signature: await account.signMessage({ message }), address: account.address };
}

export function postSignIn(baseUrl: string, body: unknown): Promise<Response> {
  return fetch(`${baseUrl}/api/auth/wallet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Signs in with the dev key and returns the 201 body (token, userId, wallet, …). */
export async function walletSignIn(
  baseUrl: string,
  privateKey: Hex,
  /** The server's clock, when it is a fake one. */
  now?: Date,
): Promise<{ token: string; userId: string; wallet: string; jti: string; expiresAt: string }> {
  const signed = await signedMessage(baseUrl, privateKey, { now });
  const response = await postSignIn(baseUrl, signed);
  const body = await response.json();
  assertEquals(response.status, 201, JSON.stringify(body));
  return body;
}
