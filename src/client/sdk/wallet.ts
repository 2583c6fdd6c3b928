/**
 * Wallet sign-in for the SDK: Sign-In with Ethereum (EIP-4361) against the
 * service's wallet tier, which trades a signed message for a 24-hour pk_live_
 * token whose daily quota follows the wallet's USDC balance. After that the
 * token is an ordinary one: hand it to StorageClient.
 *
 * This is its own entry point (`./wallet` in deno.json) because writing the
 * message takes viem: the SDK core (mod.ts) stays free of it, so an app that
 * never signs in neither loads nor bundles it. The signer is anything with an
 * address and an EIP-191 signMessage, such as a viem account; a private key
 * never passes through here.
 *
 * @example
 * import { privateKeyToAccount } from "viem/accounts";
 * import { signInWithWallet } from "./src/client/sdk/wallet.ts";
 * import { StorageClient } from "./src/client/sdk/mod.ts";
 *
 * const server = "http://127.0.0.1:8080";
 * const account = privateKeyToAccount(Deno.env.get("STORAGE_WALLET_KEY") as `0x${string}`);
 * const { token, wallet, expiresAt } = await signInWithWallet({ server, account });
 * using client = new StorageClient({ server, token }); // uploads are tier "wallet", owned by `wallet`
 * const result = await client.upload(new TextEncoder().encode("hello"), { filename: "hello.txt" });
 */
import { getAddress } from "viem";
import { createSiweMessage } from "viem/siwe";
import type { Health } from "../../kernel/health_wire.ts";
import type { WalletNonce, WalletSignInResult } from "./api_types.ts";
import { StorageError } from "./errors.ts";
import { retryPolicyOf } from "./retry.ts";
import { Transport } from "./transport.ts";
import type { RetryOptions } from "./types.ts";

export type { WalletNonce, WalletSignInResult } from "./api_types.ts";

/** Who signs: a viem local account (privateKeyToAccount) has exactly this. */
export interface WalletAccount {
  /** The Ethereum address that signs (any case; it is checksummed here). */
  address: string;
  /** EIP-191 personal_sign of the message; the signature as 0x-prefixed hex. */
  signMessage(args: { message: string }): Promise<string>;
}

/** What signInWithWallet needs: the server, and who signs. */
export interface WalletSignInOptions {
  /** Base URL of the server, e.g. http://127.0.0.1:8080; the message is bound to it. */
  server: string;
  /** The signer: a viem account, or an adapter around a browser wallet (docs/client.md). */
  account: WalletAccount;
  /**
   * The server's chain; by default read from GET /healthz (one more request,
   * which a degraded server answers 503: give the chain id to skip it).
   */
  chainId?: number;
  /**
   * The line the wallet shows above the message's fields (default "Sign in
   * to the storage staging service"); one line, no newline.
   */
  statement?: string;
  /** Retries of network errors, 5xx, 408 and short 429/503 Retry-Afters. */
  retry?: RetryOptions;
  /** fetch to use (tests, proxies); default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Aborts the requests; a signature already being asked for is the wallet's to cancel. */
  signal?: AbortSignal;
}

const DEFAULT_STATEMENT = "Sign in to the storage staging service";

/**
 * How long the signed message is good for. The server takes at most 10
 * minutes; 5 leaves room for a person to read it in their wallet and for a
 * client clock somewhat behind the server's.
 */
const MESSAGE_LIFETIME_MS = 5 * 60_000;

/**
 * Signs in as `account` and returns the new token (shown only this once) with
 * its id, scopes and expiry. Errors are StorageError, as in the rest of the
 * SDK: 401 `invalid_signature` (its message says which check failed), 503
 * `wallet_unavailable` when the server has no wallet tier (also when /healthz
 * says so, before any nonce is asked for), 429 `rate_limited` for too many
 * nonces; NetworkError when the server cannot be reached. Whatever the
 * account's signMessage throws (a user who declines in their wallet) is
 * passed on as it is.
 */
export async function signInWithWallet(options: WalletSignInOptions): Promise<WalletSignInResult> {
  const { account, signal } = options;
  if (typeof options.server !== "string" || !/^https?:\/\//i.test(options.server)) {
    throw new TypeError(`server must be an http(s) URL (got ${options.server})`);
  }
  const transport = new Transport({
    server: options.server,
    token: null,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    policy: retryPolicyOf(options.retry),
  });
  const chainId = options.chainId ?? await serverChainId(transport, signal);
  const { nonce } = await transport.json<WalletNonce>({
    method: "GET",
    path: "/api/auth/wallet/nonce",
    auth: false,
    // Each call issues a fresh nonce; an unused one just expires.
    repeatable: "safe",
    signal,
  });
  const issuedAt = new Date();
  const message = createSiweMessage({
    address: getAddress(account.address),
    // The server checks both against its own base URL.
    domain: new URL(transport.server).host,
    uri: transport.server,
    version: "1",
    chainId,
    nonce,
    issuedAt,
    expirationTime: new Date(issuedAt.getTime() + MESSAGE_LIFETIME_MS),
    statement: options.statement ?? DEFAULT_STATEMENT,
  });
  const signature = await account.signMessage({ message });
  signal?.throwIfAborted();
  return await transport.json<WalletSignInResult>({
    method: "POST",
    path: "/api/auth/wallet",
    body: { message, signature },
    auth: false,
    // The nonce is spent by the first attempt that reaches the check, so a
    // repeat after a lost answer could only be refused.
    repeatable: "only-if-not-done",
    signal,
  });
}

/** The chain the server's wallet tier is on; StorageError wallet_unavailable when it has none. */
async function serverChainId(transport: Transport, signal?: AbortSignal): Promise<number> {
  // Only the wallet part is read; absent, it counts as no wallet tier.
  const health = await transport.json<Partial<Pick<Health, "wallet">>>({
    method: "GET",
    path: "/healthz",
    auth: false,
    repeatable: "safe",
    signal,
  });
  const chainId = health.wallet?.enabled ? health.wallet.chainId : null;
  if (typeof chainId === "number") return chainId;
  // What the nonce endpoint would answer; one code for callers to match either way.
  throw new StorageError(
    503,
    "wallet_unavailable",
    `${transport.server} has no wallet tier (GET /healthz reports none)`,
  );
}
