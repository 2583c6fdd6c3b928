/**
 * The web page's cookie sessions. `POST /api/auth/session` exchanges a token
 * for a random secret in the `__Host-storage_session` cookie (HttpOnly, so no
 * script of the page can read it). The database keeps only the secret's
 * SHA-256 and the token's jti: a copied data directory, backup or log line
 * holds nothing a browser could send back. A session acts exactly as its
 * token, and ends with it: revocation is read from the token's record on
 * every request, and the session's row expires when the token does.
 *
 * A cookie rides along with any request the browser makes to this origin, so
 * a state-changing request that a cookie alone authenticates must show it
 * came from the service's own page: its `Origin` is the service's origin, or
 * (a browser that sends no Origin) `Sec-Fetch-Site: same-origin`. Anything
 * else is 403 csrf_rejected. SameSite=Strict already keeps the cookie off
 * requests from other sites; this also covers other origins of one site
 * (another port or subdomain).
 */
import { ApiError } from "../kernel/errors.ts";
import type { Clock } from "../kernel/clock.ts";
import type { SessionRecords } from "../domain/auth_records.ts";
import type { TokenCaller } from "./caller.ts";
import { SESSION_COOKIE } from "./credentials.ts";
import type { TokenService } from "./tokens.ts";
import { hashOfSecret, newSecret, SECRET_PATTERN } from "./secrets.ts";

export interface SessionServiceOptions {
  tokens: TokenService;
  records: SessionRecords;
  clock: Clock;
}

export class SessionService {
  readonly #options: SessionServiceOptions;

  constructor(options: SessionServiceOptions) {
    this.#options = options;
  }

  /** Starts a session for a live token; the secret goes into the cookie, its hash into the table. */
  async start(token: string): Promise<{ secret: string; caller: TokenCaller }> {
    const { tokens, records, clock } = this.#options;
    const caller = await tokens.verify(token, { via: "cookie" });
    const secret = newSecret();
    await records.pruneExpired(clock.now());
    await records.insert({
      idHash: hashOfSecret(secret),
      jti: caller.jti,
      expiresMs: caller.exp * 1000,
    });
    return { secret, caller };
  }

  /** The caller a session cookie acts as: 401 invalid_token when it has ended, revoked_token. */
  async authenticate(secret: string): Promise<TokenCaller> {
    const { tokens, records, clock } = this.#options;
    const jti = SECRET_PATTERN.test(secret)
      ? await records.jtiOf(hashOfSecret(secret), clock.now())
      : null;
    if (jti === null) {
      throw new ApiError("invalid_token", "The session has ended; sign in again");
    }
    return await tokens.callerOfJti(jti, { via: "cookie" });
  }

  /** Ends the session of a cookie (nothing when it had none). */
  async end(secret: string): Promise<void> {
    if (SECRET_PATTERN.test(secret)) await this.#options.records.delete(hashOfSecret(secret));
  }
}

/** The Set-Cookie of a new session: a browser session's cookie, for this origin only. */
export function sessionCookie(secret: string): string {
  return `${SESSION_COOKIE}=${secret}; Path=/; HttpOnly; Secure; SameSite=Strict`;
}

/** The Set-Cookie that removes the session cookie. */
export function endedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0`;
}

/** Methods that change nothing: a cookie alone may authenticate them from anywhere. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Throws 403 csrf_rejected unless a state-changing request shows it came from
 * `origin` (the service's own, e.g. "https://storage.example.org").
 */
export function requireSameOrigin(request: Request, origin: string): void {
  if (SAFE_METHODS.has(request.method)) return;
  const from = request.headers.get("origin");
  const sameOrigin = from !== null
    ? from === origin
    : request.headers.get("sec-fetch-site") === "same-origin";
  if (!sameOrigin) {
    throw new ApiError(
      "csrf_rejected",
      "A request signed in by the session cookie must come from this service's own page " +
        `(${origin}); send the token in the Authorization header instead`,
    );
  }
}
