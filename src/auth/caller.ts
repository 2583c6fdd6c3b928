/**
 * Who is making a request. Every handler asks the request context for the
 * caller instead of parsing headers itself: sponsored, e-mail token and wallet
 * token callers all come out of one Authenticator.
 */
import type { Scope } from "../domain/vocabulary.ts";

/** Whom a token belongs to: an e-mail address with its quota, or a wallet. */
export type TokenAccount =
  | { kind: "email"; email: string; quotaMb: number }
  | { kind: "wallet"; /** EIP-55. */ address: string };

export type CredentialForm = "header" | "query" | "cookie" | "link";

export interface TokenCaller {
  kind: "token";
  sub: string;
  account: TokenAccount;
  scopes: readonly Scope[];
  jti: string;
  /** Expiry, Unix seconds. */
  exp: number;
  /**
   * How the request carried it: the Authorization header, the deprecated
   * ?token= query parameter, the page's session cookie, or a signed upload
   * link the token's owner made (auth/upload_links.ts).
   */
  via: CredentialForm;
}

export interface SponsoredCaller {
  kind: "sponsored";
  /** Key of the client's per-IP caps (an IPv4 address or an IPv6 /64). */
  clientKey: string;
}

export type Caller = TokenCaller | SponsoredCaller;

/**
 * Turns a request's credentials into a caller. Returns null when the request
 * carries no credentials at all; throws ApiError (401) when it carries bad ones.
 */
export interface Authenticator {
  authenticate(request: Request, url: URL): Promise<TokenCaller | null>;
}
