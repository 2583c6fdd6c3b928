/**
 * What a wallet sign-in answers, and how much of a request it reads: kept
 * apart from wallet_sign_in.ts (which needs viem) so the API's schemas can
 * name them without pulling the chain code in.
 */
import type { Scope } from "../domain.ts";

/** Longest message read (a SIWE message with a statement and resources is well below). */
export const MAX_MESSAGE_CHARS = 8192;
/** Longest signature read: 65 bytes for a key, more for contract wallets (ERC-6492 wraps). */
export const MAX_SIGNATURE_CHARS = 2 + 2 * 16_384;

export interface WalletSignInResult {
  token: string;
  userId: string;
  /** EIP-55. */
  wallet: string;
  scopes: Scope[];
  /** RFC 3339. */
  expiresAt: string;
  jti: string;
}
