/**
 * `storage wallet login`: a wallet-tier token for the Ethereum key in
 * STORAGE_WALLET_KEY, by Sign-In with Ethereum (the SDK's ./wallet entry
 * point), printed the way `storage signup` prints its token.
 *
 * The key comes from the environment only: on a command line it would stay
 * in shell history and show in `ps`, so the parser refuses it there
 * (args.ts), and nothing here repeats it, not even in an error. It
 * signs one message on this machine and is never sent.
 */
import { privateKeyToAccount } from "viem/accounts";
import { signInWithWallet } from "../sdk/wallet.ts";
import type { WalletSignInResult } from "../sdk/wallet.ts";
import { newTokenLines } from "./account.ts";
import { integerFlag, UsageError } from "./args.ts";
import type { Flags, GlobalOptions } from "./args.ts";
import { EXIT } from "./errors.ts";
import { printJson, printLines } from "./output.ts";
import type { CliIo } from "./output.ts";

export const WALLET_KEY_VARIABLE = "STORAGE_WALLET_KEY";

export interface WalletLoginOptions {
  io: CliIo;
  global: GlobalOptions;
  flags: Flags;
  /** The value of STORAGE_WALLET_KEY, if set. */
  key: string | undefined;
}

export async function walletLoginCommand(
  { io, global, flags, key }: WalletLoginOptions,
): Promise<number> {
  const rawChainId = flags["chain-id"];
  const chainId = typeof rawChainId === "string"
    ? integerFlag("--chain-id", rawChainId, 1, Number.MAX_SAFE_INTEGER)
    : undefined;
  const result = await signInWithWallet({
    server: global.server,
    account: accountOf(key),
    chainId,
    retry: global.attempts === undefined ? undefined : { attempts: global.attempts },
    signal: io.signal,
  });
  await (global.json ? printJson(io, result) : printLines(io, walletTokenLines(result)));
  return EXIT.ok;
}

/** The key's account, or a UsageError (exit 2) that says what is wrong without showing the key. */
function accountOf(key: string | undefined) {
  if (key === undefined || key === "") {
    throw new UsageError(
      `${WALLET_KEY_VARIABLE} is not set: "wallet login" signs with the private key in it ` +
        "(0x and 64 hex digits)",
    );
  }
  const trimmed = key.trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(trimmed)) {
    throw new UsageError(
      `${WALLET_KEY_VARIABLE} must be a private key: 0x and 64 hex digits ` +
        `(it has ${trimmed.length} characters)`,
    );
  }
  try {
    return privateKeyToAccount(trimmed as `0x${string}`);
  } catch {
    // viem's message would print the key (as a number): say only what is wrong with it.
    throw new UsageError(
      `${WALLET_KEY_VARIABLE} is not a valid secp256k1 private key (0 or too large)`,
    );
  }
}

function walletTokenLines(r: WalletSignInResult): string[] {
  return newTokenLines(
    r,
    `${r.wallet}: wallet tier (a day: USDC balance × bytes per USDC, see storage limits), ` +
      `scopes ${r.scopes.join(",")}, expires ${r.expiresAt}`,
  );
}
