/**
 * How tokens are signed and checked, whatever the algorithm: HS256 with the
 * server's HMAC key (auth/hmac_key.ts, the default), or RS256 with an RSA key
 * ring whose public keys anyone can fetch (auth/rsa_keys.ts). Each signing
 * verifies with its own key and its own algorithm only, so a token cannot
 * choose how it is checked: an HS256 token keyed with the RSA public key is
 * refused as any forgery is.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import type { JWTPayload, JWTVerifyOptions } from "jose";
import type { HmacKey } from "./hmac_key.ts";

export type TokenAlg = "HS256" | "RS256";

export interface TokenSigning {
  readonly alg: TokenAlg;
  /** Increases when the keys change, so caches of verified tokens know to forget. */
  readonly version: number;
  /** The JWS of `payload` (header: alg, typ, and kid when the keys have ids). */
  sign(payload: JWTPayload): Promise<string>;
  /** The payload of a JWS this service signed; throws jose's errors otherwise. */
  verify(jws: string, options: Omit<JWTVerifyOptions, "algorithms">): Promise<JWTPayload>;
}

/**
 * Verifies with `key()`; when the signature (or the key's id) is unknown,
 * re-reads the keys once (another instance or `rotate-key` may have changed
 * them) and tries again.
 */
export async function verifyReloading(
  verify: () => Promise<JWTPayload>,
  reloadAfterFailure: () => Promise<boolean>,
): Promise<JWTPayload> {
  try {
    return await verify();
  } catch (error) {
    const unknownKey = error instanceof joseErrors.JWSSignatureVerificationFailed ||
      error instanceof joseErrors.JWKSNoMatchingKey;
    if (!unknownKey || !await reloadAfterFailure()) throw error;
    return await verify();
  }
}

/** HS256 with the server's HMAC key (re-read from its file or database when it rotates). */
export function hmacSigning(hmacKey: HmacKey): TokenSigning {
  return {
    alg: "HS256",
    get version() {
      return hmacKey.version;
    },
    sign: (payload) =>
      new SignJWT(payload).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(hmacKey.key),
    verify: async (jws, options) =>
      await verifyReloading(
        async () =>
          (await jwtVerify(jws, hmacKey.key, { ...options, algorithms: ["HS256"] })).payload,
        () => hmacKey.reloadAfterFailure(),
      ),
  };
}
