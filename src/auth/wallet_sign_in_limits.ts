/**
 * How much of a wallet sign-in request is read: kept apart from
 * wallet_sign_in.ts (which needs viem) so the API's schemas can name the
 * limits without pulling the chain code in.
 */

/** Longest message read (a SIWE message with a statement and resources is well below). */
export const MAX_MESSAGE_CHARS = 8192;
/** Longest signature read: 65 bytes for a key, more for contract wallets (ERC-6492 wraps). */
export const MAX_SIGNATURE_CHARS = 2 + 2 * 16_384;
