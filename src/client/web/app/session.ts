/// <reference lib="dom" />
/**
 * Who the page acts as: no one (sponsored uploads) or the holder of one
 * token. The token lives in sessionStorage, never localStorage: it is gone
 * when the tab closes, other tabs do not see it, and it is not left on the
 * machine for whoever uses the browser next (docs/web.md says why). The
 * token's claims (e-mail or wallet, scopes, expiry) are read from its JWT
 * payload, which is plain base64url JSON. The session also owns the one
 * StorageClient the page talks through, remade whenever the token changes.
 */
import { StorageClient, StorageError } from "../../sdk/mod.ts";
import type { Scope } from "../../sdk/mod.ts";
import { describeError } from "./messages.ts";
import { meteredFetch, SendMeter } from "./send_meter.ts";

const STORAGE_KEY = "storage.token";

/** The parts of a token's payload the page shows or decides by (docs/api.md#authentication). */
export interface TokenClaims {
  /** E-mail tokens. */
  email?: string;
  /** Wallet tokens: the address. */
  wallet?: string;
  scopes: Scope[];
  /** Daily quota in MiB (e-mail tokens). */
  quotaMb?: number;
  /** Expiry, Unix seconds. */
  exp: number;
  jti: string;
}

/** The claims of a pk_live_ token, or null when it is not one (or already expired). */
export function claimsOf(token: string, nowSeconds = Date.now() / 1000): TokenClaims | null {
  const match = /^pk_live_[\w-]+\.([\w-]+)\.[\w-]+$/.exec(token);
  if (!match) return null;
  try {
    const base64 = match[1].replaceAll("-", "+").replaceAll("_", "/");
    const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    const valid = Array.isArray(claims.scopes) && typeof claims.exp === "number" &&
      typeof claims.jti === "string" && claims.exp > nowSeconds;
    return valid ? claims as TokenClaims : null;
  } catch {
    return null;
  }
}

/** Whether an error says the token itself is no good (so the page should sign out). */
export function isTokenRefusal(error: unknown): boolean {
  return error instanceof StorageError &&
    (error.code === "invalid_token" || error.code === "revoked_token");
}

export class Session {
  /** Upload bodies on the wire, for the upload view's send progress. */
  readonly sendMeter = new SendMeter();
  #token: string | null = null;
  #claims: TokenClaims | null = null;
  #client: StorageClient | null = null;
  readonly #listeners: ((reason: string | null) => void)[] = [];

  /** The session this tab had (a token past its expiry is dropped). */
  static restore(): Session {
    const session = new Session();
    const token = sessionStorage.getItem(STORAGE_KEY);
    const claims = token === null ? null : claimsOf(token);
    if (token !== null && claims !== null) {
      session.#token = token;
      session.#claims = claims;
    } else {
      sessionStorage.removeItem(STORAGE_KEY);
    }
    return session;
  }

  get token(): string | null {
    return this.#token;
  }

  get claims(): TokenClaims | null {
    return this.#claims;
  }

  /** Whether the token has a scope (false when signed out). */
  can(scope: Scope): boolean {
    return this.#claims?.scopes.includes(scope) ?? false;
  }

  /** The client for the current token (sponsored when signed out). */
  get client(): StorageClient {
    this.#client ??= new StorageClient({
      server: location.origin,
      token: this.#token,
      // The page's policy refuses the SDK's default data: Worker.
      hashWorkerUrl: "/app/hash-worker.js",
      fetch: meteredFetch(this.sendMeter),
    });
    return this.#client;
  }

  /** Keeps a token for this tab; false when it is not a live pk_live_ token. */
  signIn(token: string): boolean {
    const claims = claimsOf(token);
    if (claims === null) return false;
    sessionStorage.setItem(STORAGE_KEY, token);
    this.#replace(token, claims, null);
    return true;
  }

  /** Forgets the token; `reason` is shown to say why, when it was not the person's choice. */
  signOut(reason: string | null = null): void {
    sessionStorage.removeItem(STORAGE_KEY);
    this.#replace(null, null, reason);
  }

  /**
   * Words for a failed call. A refused token (revoked, expired) also signs
   * out, and the account panel then says why.
   */
  explain(error: unknown): string {
    const words = describeError(error);
    if (isTokenRefusal(error) && this.#token !== null) this.signOut(`You are signed out. ${words}`);
    return words;
  }

  /** Called after every sign-in and sign-out, with the reason of a forced sign-out. */
  onChange(listener: (reason: string | null) => void): void {
    this.#listeners.push(listener);
  }

  #replace(token: string | null, claims: TokenClaims | null, reason: string | null): void {
    this.#token = token;
    this.#claims = claims;
    this.#client?.close();
    this.#client = null;
    for (const listener of this.#listeners) listener(reason);
  }
}
