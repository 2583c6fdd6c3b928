/**
 * Who is making a request. Every handler asks the request context for the
 * caller instead of parsing headers itself, so the token tier, and later the
 * wallet tier, slot in behind one Authenticator.
 */
import type { Scope } from "../domain.ts";

export interface TokenCaller {
  kind: "token";
  sub: string;
  email: string;
  scopes: readonly Scope[];
  quotaMb: number;
  jti: string;
  /** Expiry, Unix seconds. */
  exp: number;
  /** True when the token came in the deprecated ?token= query parameter. */
  viaQuery: boolean;
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
