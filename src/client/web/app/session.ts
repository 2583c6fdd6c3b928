/// <reference lib="dom" />
/**
 * Who the page acts as: no one (sponsored uploads) or the token of a cookie
 * session. The page keeps no token anywhere a script can read it: a token it
 * is given (by signup, a wallet sign-in, or pasted) goes straight to POST
 * /api/auth/session, which answers with an HttpOnly cookie that the browser
 * sends with the page's requests, and the page forgets the token (docs/web.md
 * says why). What the page shows of the session (e-mail or wallet, scopes,
 * expiry) is what GET /api/auth/session answers. The session also owns the
 * one StorageClient the page talks through, remade whenever it changes.
 */
import { StorageClient, StorageError } from "../../sdk/mod.ts";
import type { Scope, SessionInfo } from "../../sdk/mod.ts";
import { describeError } from "./messages.ts";
import { meteredFetch, SendMeter } from "./send_meter.ts";

/** The parts of a token the page shows or decides by (docs/api.md#authentication). */
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

/** What GET /api/auth/session said, as the page's claims; null when signed out. */
function claimsOfSession(info: SessionInfo): TokenClaims | null {
  if (!info.signedIn || info.jti === null || info.expiresAt === null) return null;
  return {
    email: info.email ?? undefined,
    wallet: info.wallet ?? undefined,
    scopes: info.scopes,
    quotaMb: info.quotaMb ?? undefined,
    exp: Date.parse(info.expiresAt) / 1000,
    jti: info.jti,
  };
}

/** Whether an error says the token itself is no good (so the page should sign out). */
export function isTokenRefusal(error: unknown): boolean {
  return error instanceof StorageError &&
    (error.code === "invalid_token" || error.code === "revoked_token");
}

export class Session {
  /** Upload bodies on the wire, for the upload view's send progress. */
  readonly sendMeter = new SendMeter();
  #claims: TokenClaims | null = null;
  #client: StorageClient | null = null;
  readonly #listeners: ((reason: string | null) => void)[] = [];

  get claims(): TokenClaims | null {
    return this.#claims;
  }

  get signedIn(): boolean {
    return this.#claims !== null;
  }

  /** Whether the session's token has a scope (false when signed out). */
  can(scope: Scope): boolean {
    return this.#claims?.scopes.includes(scope) ?? false;
  }

  /** The page's client: it sends no token; the browser adds the session cookie, if any. */
  get client(): StorageClient {
    this.#client ??= new StorageClient({
      server: location.origin,
      // The page's policy refuses the SDK's default data: Worker.
      hashWorkerUrl: "/app/hash-worker.js",
      fetch: meteredFetch(this.sendMeter),
    });
    return this.#client;
  }

  /** Asks the server who the page is (its cookie's session, if any); then tells the listeners. */
  async load(): Promise<void> {
    try {
      this.#replace(claimsOfSession(await this.client.session()), null);
    } catch (error) {
      // An ended or revoked session: say why, and drop the cookie.
      if (isTokenRefusal(error)) {
        return await this.signOut(`You are signed out. ${describeError(error)}`);
      }
      this.#replace(null, describeError(error));
    }
  }

  /** Starts a cookie session for a token, which the page then forgets. Throws a refusal. */
  async signIn(token: string): Promise<void> {
    await this.client.startSession(token);
    // A browser keeps a Secure cookie only from HTTPS (or localhost): ask what it sends now.
    const claims = claimsOfSession(await this.client.session());
    if (claims === null) {
      throw new Error(
        "This browser did not keep the sign-in cookie: open the page over HTTPS to sign in.",
      );
    }
    this.#replace(claims, null);
  }

  /** Ends the session; `reason` is shown to say why, when it was not the person's choice. */
  async signOut(reason: string | null = null): Promise<void> {
    try {
      await this.client.endSession();
    } catch {
      // Signed out here all the same; the cookie's session ends with its token.
    }
    this.#replace(null, reason);
  }

  /**
   * Words for a failed call. A refused session (revoked, expired) also signs
   * out, and the account panel then says why.
   */
  explain(error: unknown): string {
    const words = describeError(error);
    if (isTokenRefusal(error) && this.#claims !== null) {
      void this.signOut(`You are signed out. ${words}`);
    }
    return words;
  }

  /** Called after every sign-in, sign-out and load, with the reason of a forced sign-out. */
  onChange(listener: (reason: string | null) => void): void {
    this.#listeners.push(listener);
  }

  #replace(claims: TokenClaims | null, reason: string | null): void {
    this.#claims = claims;
    this.#client?.close();
    this.#client = null;
    for (const listener of this.#listeners) listener(reason);
  }
}
