/**
 * The service's own vocabulary, shared by every layer: the database stores
 * these values and records, auth and limits decide with them, handlers render
 * them. It imports only the API's wire types (wire.ts, which imports nothing),
 * so no layer has to import another to name them (db/ and auth/ in particular
 * never import each other).
 */

import type { Scope } from "./wire.ts";

// Scopes and tiers are words of the API itself: defined with its bodies, named here too.
export { SCOPES, TIERS } from "./wire.ts";
export type { Scope, Tier } from "./wire.ts";

/**
 * What the service keeps of a token it issued: never the token itself. A token
 * belongs to an e-mail address (and carries a daily quota in MiB) or to a
 * wallet (the quota comes from the wallet's USDC balance): exactly one of
 * `email` and `wallet` is set, and `quotaMb` is set with `email` only.
 */
export interface TokenRecord {
  jti: string;
  sub: string;
  email: string | null;
  /** EIP-55 address of a wallet sign-in. */
  wallet: string | null;
  label: string;
  scopes: Scope[];
  quotaMb: number | null;
  /** RFC 3339. */
  issuedAt: string;
  /** RFC 3339. */
  expiresAt: string;
  /** RFC 3339, or null while the token is live. */
  revokedAt: string | null;
}

/** A pending signup code of `--signup verify`, with the token fields it will mint. */
export interface SignupCodeRecord {
  email: string;
  /** Lowercase hex SHA-256 of the code; the code itself is only in the mail. */
  codeHash: string;
  label: string;
  scopes: Scope[];
  quotaMb: number;
  /** RFC 3339: when the code was sent. */
  createdAt: string;
  /** RFC 3339. */
  expiresAt: string;
  /** Wrong tries since the address's first code of this window (a new code keeps them). */
  attempts: number;
}
