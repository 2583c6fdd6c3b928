/**
 * What a person gets back when a token is minted, by the signup endpoints or
 * by the operator's `token mint`: the token (shown this once, never stored),
 * who it is for, and the jti needed to revoke it later.
 */
import type { TokenRecord } from "../domain/auth_records.ts";
import type { SignupResult } from "../kernel/wire.ts";

/** A freshly minted token, as TokenService.mint returns it. */
export interface MintedToken {
  token: string;
  record: Pick<TokenRecord, "jti" | "sub" | "email" | "scopes" | "quotaMb" | "expiresAt">;
}

export function signupResultOf(minted: MintedToken): SignupResult {
  const { record } = minted;
  if (record.email === null || record.quotaMb === null) {
    throw new Error("signupResultOf: not an e-mail token");
  }
  return {
    token: minted.token,
    userId: record.sub,
    email: record.email,
    scopes: record.scopes,
    quotaMb: record.quotaMb,
    expiresAt: record.expiresAt,
    jti: record.jti,
  };
}
