/**
 * The hand-off's start-up error, apart from the signer (payer.ts) so main.ts
 * can name it without loading the chain libraries a server without a
 * hand-off never needs.
 */

/** A key file that cannot be used; the message names the file, never its content. */
export class PayerKeyError extends Error {
  override name = "PayerKeyError";
}
