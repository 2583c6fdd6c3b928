/**
 * Access tokens: `pk_live_` + a JWT, HS256 (the default) or RS256 with a
 * `kid` (`--token-alg`, auth/token_signing.ts). An e-mail token's claims are
 * exactly sub, email, scopes, quotaMb, iat, exp and jti; a wallet token's
 * (minted by a Sign-In with Ethereum) exactly sub, wallet, scopes, iat, exp
 * and jti: its quota is not a claim, it follows the wallet's USDC balance.
 *
 * Verification accepts the server's one algorithm only (jose rejects `alg:
 * none` and every other algorithm given the allow-list), one spelling of each token (canonical
 * unpadded base64url parts), an exp in the future and before year 10000,
 * and checks every claim's type. Signature checks are remembered per token string
 * (until the key rotates), because the HMAC and JSON work dominate a request;
 * expiry and revocation are still checked on every request.
 */
import { errors as joseErrors } from "jose";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { ApiError } from "../kernel/errors.ts";
import type { Clock } from "../kernel/clock.ts";
import { toRfc3339 } from "../kernel/clock.ts";
import type { TokenRecord, TokenRecords } from "../domain/auth_records.ts";
import type { CredentialForm, TokenCaller } from "./caller.ts";
import { SCOPES } from "../domain/vocabulary.ts";
import type { Scope } from "../domain/vocabulary.ts";
import type { TokenSigning } from "./token_signing.ts";

export const TOKEN_PREFIX = "pk_live_";
/** Longest token string considered at all; ours are ~400 characters. */
const MAX_TOKEN_LENGTH = 4096;
const VERIFIED_CACHE_SIZE = 10_000;
/** How far ahead of our clock a token's iat may be (clocks of two machines drift). */
const MAX_CLOCK_SKEW_SECONDS = 60;
const EMAIL_CLAIM_NAMES = ["email", "exp", "iat", "jti", "quotaMb", "scopes", "sub"];
const WALLET_CLAIM_NAMES = ["exp", "iat", "jti", "scopes", "sub", "wallet"];
/** A wallet token lives a day: a signature is cheap to make again, a leaked token is not. */
export const WALLET_TOKEN_LIFETIME_SECONDS = 86_400;
/** What the token list shows for a wallet sign-in (it has no label of its own). */
export const WALLET_TOKEN_LABEL = "wallet sign-in";

interface CommonClaims {
  sub: string;
  scopes: Scope[];
  iat: number;
  exp: number;
  jti: string;
}

export interface EmailTokenClaims extends CommonClaims {
  email: string;
  quotaMb: number;
}

export interface WalletTokenClaims extends CommonClaims {
  /** EIP-55 address. */
  wallet: string;
}

export type TokenClaims = EmailTokenClaims | WalletTokenClaims;

export interface MintInput {
  email: string;
  label: string;
  scopes: readonly Scope[];
  quotaMb: number;
}

/** What minting and checking tokens needs of where token metadata is kept. */
export type TokenStore = Pick<TokenRecords, "insert" | "get" | "revocationOf">;

export interface TokenServiceOptions {
  /** HS256 with the HMAC key, or RS256 with the RSA key ring (auth/token_signing.ts). */
  signing: TokenSigning;
  records: TokenStore;
  clock: Clock;
  lifetimeDays: number;
  /** Highest quotaMb a token may carry (the tier's daily cap in MiB). */
  maxQuotaMb: number;
}

/**
 * The stable user id of an e-mail or a wallet address: SHA-256 of the trimmed,
 * lowercased text, not keyed by the HMAC key, so user ids survive key rotation
 * (and a wallet's id does not depend on how its address is capitalized).
 */
export function userIdOf(emailOrAddress: string): string {
  return "u_" +
    createHash("sha256").update(emailOrAddress.trim().toLowerCase()).digest("hex").slice(0, 32);
}

export class TokenService {
  readonly #options: TokenServiceOptions;
  readonly #verified = new Map<string, TokenClaims>();
  #cachedKeyVersion: number;

  constructor(options: TokenServiceOptions) {
    this.#options = options;
    this.#cachedKeyVersion = options.signing.version;
  }

  /** Signs a new e-mail token and records its metadata (never the token itself). */
  mint(input: MintInput): Promise<{ token: string; claims: TokenClaims; record: TokenRecord }> {
    const iat = this.#nowSeconds();
    return this.#signAndRecord({
      sub: userIdOf(input.email),
      email: input.email,
      scopes: [...input.scopes],
      quotaMb: input.quotaMb,
      iat,
      exp: iat + this.#options.lifetimeDays * 86_400,
      jti: crypto.randomUUID(),
    }, input.label);
  }

  /** Signs a wallet token for an EIP-55 address whose signature was checked. */
  mintForWallet(
    wallet: string,
  ): Promise<{ token: string; claims: TokenClaims; record: TokenRecord }> {
    const iat = this.#nowSeconds();
    return this.#signAndRecord({
      sub: userIdOf(wallet),
      wallet,
      scopes: [...SCOPES],
      iat,
      exp: iat + WALLET_TOKEN_LIFETIME_SECONDS,
      jti: crypto.randomUUID(),
    }, WALLET_TOKEN_LABEL);
  }

  #nowSeconds(): number {
    return Math.floor(this.#options.clock.now() / 1000);
  }

  async #signAndRecord(
    claims: TokenClaims,
    label: string,
  ): Promise<{ token: string; claims: TokenClaims; record: TokenRecord }> {
    const jwt = await this.#options.signing.sign({ ...claims });
    const record: TokenRecord = {
      jti: claims.jti,
      sub: claims.sub,
      email: "email" in claims ? claims.email : null,
      wallet: "wallet" in claims ? claims.wallet : null,
      label,
      scopes: claims.scopes,
      quotaMb: "quotaMb" in claims ? claims.quotaMb : null,
      issuedAt: toRfc3339(claims.iat * 1000),
      expiresAt: toRfc3339(claims.exp * 1000),
      revokedAt: null,
    };
    await this.#options.records.insert(record);
    return { token: TOKEN_PREFIX + jwt, claims, record };
  }

  /** Verifies a token string and returns its caller, or throws 401 invalid_token / revoked_token. */
  async verify(token: string, options: { via: CredentialForm }): Promise<TokenCaller> {
    if (token.length > MAX_TOKEN_LENGTH) throw invalid("Token is too long");
    if (!token.startsWith(TOKEN_PREFIX)) throw invalid(`Token must start with ${TOKEN_PREFIX}`);
    const claims = await this.#verifySignature(token);
    const nowSeconds = this.#options.clock.now() / 1000;
    if (claims.exp <= nowSeconds) throw invalid("Token has expired");
    const revocation = await this.#options.records.revocationOf(claims.jti);
    if (revocation === "unknown") throw invalid("Token was not issued by this service");
    if (revocation !== null) {
      throw new ApiError("revoked_token", "Token has been revoked");
    }
    return callerOf(claims, options.via);
  }

  /**
   * The caller of a token known by its jti alone (a cookie session's): what
   * this service recorded when it issued the token, if it is still live.
   */
  async callerOfJti(jti: string, options: { via: CredentialForm }): Promise<TokenCaller> {
    const record = await this.#options.records.get(jti);
    if (record === null) throw invalid("Token was not issued by this service");
    if (record.revokedAt !== null) throw new ApiError("revoked_token", "Token has been revoked");
    const exp = Date.parse(record.expiresAt) / 1000;
    if (exp <= this.#options.clock.now() / 1000) throw invalid("Token has expired");
    const common = {
      sub: record.sub,
      scopes: record.scopes,
      iat: Date.parse(record.issuedAt) / 1000,
      exp,
      jti,
    };
    return callerOf(
      record.wallet !== null
        ? { ...common, wallet: record.wallet }
        : { ...common, email: record.email!, quotaMb: Number(record.quotaMb) },
      options.via,
    );
  }

  async #verifySignature(token: string): Promise<TokenClaims> {
    const { signing, clock } = this.#options;
    if (signing.version !== this.#cachedKeyVersion) {
      this.#verified.clear();
      this.#cachedKeyVersion = signing.version;
    }
    const cached = this.#verified.get(token);
    if (cached) return cached;
    // jose decodes leniently; one token must not have several strings (a blocked one respelled).
    if (!isCanonicalJws(token.slice(TOKEN_PREFIX.length))) throw invalid("Token is invalid");
    let payload: Record<string, unknown>;
    try {
      // Only the signing's own algorithm and keys (another instance may have rotated them).
      payload = await signing.verify(token.slice(TOKEN_PREFIX.length), {
        typ: "JWT",
        requiredClaims: ["exp", "iat", "jti", "sub"],
        currentDate: new Date(clock.now()),
      });
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw invalid("Token has expired");
      throw invalid("Token is invalid");
    }
    const claims = this.#checkClaims(payload);
    if (claims.iat > clock.now() / 1000 + MAX_CLOCK_SKEW_SECONDS) {
      throw invalid("Token is issued in the future");
    }
    await this.#checkAgainstRecord(claims);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) {
      // Forget the oldest entry (Map keeps insertion order).
      this.#verified.delete(this.#verified.keys().next().value!);
    }
    this.#verified.set(token, claims);
    return claims;
  }

  /**
   * A valid signature proves only that the key signed it. Claims must also be
   * exactly what this service recorded when it issued the jti: with a leaked
   * key, a token whose sub, scopes or quota were changed is still refused.
   * Checked once per token string (then cached); revocation is read per request.
   */
  async #checkAgainstRecord(claims: TokenClaims): Promise<void> {
    const record = await this.#options.records.get(claims.jti);
    if (record === null) throw invalid("Token was not issued by this service");
    const same = record.sub === claims.sub &&
      record.email === ("email" in claims ? claims.email : null) &&
      record.wallet === ("wallet" in claims ? claims.wallet : null) &&
      record.scopes.length === claims.scopes.length &&
      record.scopes.every((scope, i) => scope === claims.scopes[i]) &&
      (record.quotaMb === null ? null : Number(record.quotaMb)) ===
        ("quotaMb" in claims ? claims.quotaMb : null) &&
      record.issuedAt === toRfc3339(claims.iat * 1000) &&
      record.expiresAt === toRfc3339(claims.exp * 1000);
    if (!same) throw invalid("Token claims do not match the token this service issued");
  }

  #checkClaims(payload: Record<string, unknown>): TokenClaims {
    const names = Object.keys(payload).sort();
    const { sub, email, wallet, scopes, quotaMb, iat, exp, jti } = payload;
    const sameNames = (expected: string[]) =>
      names.length === expected.length && names.every((n, i) => n === expected[i]);
    const account = sameNames(EMAIL_CLAIM_NAMES)
      ? typeof email === "string" && Number.isSafeInteger(quotaMb) &&
        (quotaMb as number) >= 1 && (quotaMb as number) <= this.#options.maxQuotaMb
      : sameNames(WALLET_CLAIM_NAMES) && typeof wallet === "string";
    const ok = account && typeof sub === "string" && typeof jti === "string" &&
      Array.isArray(scopes) && scopes.length > 0 &&
      scopes.every((s) => (SCOPES as readonly unknown[]).includes(s)) &&
      isRepresentableTime(iat) && isRepresentableTime(exp);
    if (!ok) throw invalid("Token claims are malformed");
    return payload as unknown as TokenClaims;
  }
}

function callerOf(claims: TokenClaims, via: CredentialForm): TokenCaller {
  return {
    kind: "token",
    sub: claims.sub,
    account: "wallet" in claims
      ? { kind: "wallet", address: claims.wallet }
      : { kind: "email", email: claims.email, quotaMb: claims.quotaMb },
    scopes: claims.scopes,
    jti: claims.jti,
    exp: claims.exp,
    via,
  };
}

/** 9999-12-31T23:59:59Z: the last second an RFC 3339 timestamp (and the token record) can hold. */
const LAST_REPRESENTABLE_SECOND = 253_402_300_799;

/** A whole number of seconds from 1970 to the end of year 9999. */
function isRepresentableTime(seconds: unknown): boolean {
  return Number.isSafeInteger(seconds) && (seconds as number) >= 0 &&
    (seconds as number) <= LAST_REPRESENTABLE_SECOND;
}

/**
 * Three parts, each canonical unpadded base64url: only the alphabet, no `=`,
 * and the last character's unused low bits zero (so decoding and encoding
 * again gives the same text).
 */
function isCanonicalJws(jws: string): boolean {
  const parts = jws.split(".");
  return parts.length === 3 &&
    parts.every((part) =>
      /^[A-Za-z0-9_-]+$/.test(part) && Buffer.from(part, "base64url").toString("base64url") === part
    );
}

function invalid(message: string): ApiError {
  return new ApiError("invalid_token", message);
}
