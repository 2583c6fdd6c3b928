/**
 * The RSA key ring of `--token-alg RS256`, kept where the deployment keeps
 * it (domain/signing_keys.ts): the data directory's rsa-keys.json
 * (auth/rsa_key_file.ts), or a PostgreSQL table every instance reads
 * (db/postgres/rsa_keys.ts). The first key signs (its private half is kept);
 * the others are earlier keys, public half only, each published until
 * `retiresAt`, the latest a token it signed can expire. `rotate-key` puts a
 * new 2048-bit key first and retires the one before, so tokens it signed
 * keep working (and verifying anywhere) until they expire. Every key's `kid`
 * is its RFC 7638 thumbprint, named in each token's header; GET
 * /.well-known/jwks.json publishes the live public keys. A running server
 * re-reads the keys every --hmac-key-reload seconds, and before it answers a
 * token naming a kid it does not know or a request for the public keys (one
 * read every 0.1 s at most, shared by the requests waiting for it), so a
 * rotation made elsewhere is never missed by an instance asked about it.
 */
import { calculateJwkThumbprint, errors as joseErrors, jwtVerify, SignJWT } from "jose";
import type { JWK, JWTHeaderParameters, JWTPayload, JWTVerifyOptions } from "jose";
import { KeyFileError } from "./hmac_key.ts";
import type { Jwks } from "../kernel/wire.ts";
import type { RsaKeyStore, StoredRsaKey } from "../domain/signing_keys.ts";
import type { TokenSigning } from "./token_signing.ts";
import { ReloadingKey } from "./key_reload.ts";

const RSA = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;
export const MIN_RSA_BITS = 2048;

async function newStoredKey(nowMs: number): Promise<StoredRsaKey> {
  const pair = await crypto.subtle.generateKey(
    { ...RSA, modulusLength: MIN_RSA_BITS, publicExponent: new Uint8Array([1, 0, 1]) },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const publicJwk = await crypto.subtle.exportKey("jwk", pair.publicKey) as JWK;
  const privateJwk = await crypto.subtle.exportKey("jwk", pair.privateKey) as JWK;
  const publicPart: JWK = { kty: "RSA", n: publicJwk.n, e: publicJwk.e };
  return {
    kid: await calculateJwkThumbprint(publicPart),
    createdAt: new Date(nowMs).toISOString(),
    retiresAt: null,
    publicJwk: publicPart,
    privateJwk,
  };
}

/** Checks the keys as kept: a signing key first, RSA keys of 2048 bits or more. */
function checkKeys(keys: StoredRsaKey[] | null, where: string): StoredRsaKey[] {
  const bits = (key: StoredRsaKey) =>
    typeof key?.publicJwk?.n === "string" ? key.publicJwk.n.length * 6 : 0;
  if (keys === null || keys.length === 0) {
    throw new KeyFileError(`Cannot use the RSA keys in ${where}: there are none`);
  }
  if (keys[0].privateJwk === undefined) {
    throw new KeyFileError(
      `Cannot use the RSA keys in ${where}: the first key has no private half`,
    );
  }
  if (keys.some((key) => bits(key) < MIN_RSA_BITS || typeof key.kid !== "string")) {
    throw new KeyFileError(
      `Cannot use the RSA keys in ${where}: every key needs a kid and ${MIN_RSA_BITS} bits or more`,
    );
  }
  return keys;
}

/**
 * Puts a new signing key first and keeps the one before (public half only)
 * for `keepPublicMs` (the longest a token lives); drops keys retired by now.
 * A place without keys gets its first key.
 */
export async function rotateRsaKeys(
  store: RsaKeyStore,
  options: { nowMs: number; keepPublicMs: number },
): Promise<void> {
  const { nowMs, keepPublicMs } = options;
  const next = await newStoredKey(nowMs);
  await store.update((keys) => {
    if (keys.length > 0) checkKeys(keys, store.where);
    const kept = keys.map((key): StoredRsaKey =>
      key.retiresAt !== null ? key : {
        kid: key.kid,
        createdAt: key.createdAt,
        retiresAt: new Date(nowMs + keepPublicMs).toISOString(),
        publicJwk: key.publicJwk,
      }
    ).filter((key) => Date.parse(key.retiresAt!) > nowMs);
    return [next, ...kept];
  });
}

/** The keys in force: the signing key, and every public key by kid. */
interface LoadedKeys {
  signing: { kid: string; key: CryptoKey };
  published: StoredRsaKey[];
  verifying: Map<string, CryptoKey>;
}

async function loadKeys(text: string): Promise<LoadedKeys> {
  const keys: StoredRsaKey[] = JSON.parse(text);
  const verifying = new Map<string, CryptoKey>();
  for (const key of keys) {
    verifying.set(
      key.kid,
      await crypto.subtle.importKey("jwk", key.publicJwk as JWK, RSA, false, ["verify"]),
    );
  }
  const key = await crypto.subtle.importKey("jwk", keys[0].privateJwk as JWK, RSA, false, [
    "sign",
  ]);
  return { signing: { kid: keys[0].kid, key }, published: keys, verifying };
}

/** The key ring a server signs and verifies RS256 tokens with. */
export class RsaKeyRing extends ReloadingKey {
  #keys: LoadedKeys;

  private constructor(text: string, read: () => Promise<string>, keys: LoadedKeys) {
    super(text, read);
    this.#keys = keys;
  }

  /** Opens the ring kept in `store`, making it with one key when it has none and may. */
  static async open(
    store: RsaKeyStore,
    options: { createIfMissing: boolean },
  ): Promise<RsaKeyRing> {
    let keys = await store.read();
    if (keys === null && options.createIfMissing) {
      // Of instances starting at once, one key wins and every one signs with it.
      keys = (await store.adopt([await newStoredKey(Date.now())])).keys;
    }
    const read = async () => JSON.stringify(checkKeys(await store.read(), store.where));
    const text = JSON.stringify(checkKeys(keys, store.where));
    return new RsaKeyRing(text, read, await loadKeys(text));
  }

  /** The public keys in force at `nowMs`, as a JWK Set. */
  jwks(nowMs: number): Jwks {
    return {
      keys: this.#keys.published
        .filter((key) => key.retiresAt === null || Date.parse(key.retiresAt) > nowMs)
        .map((key) => ({
          kty: "RSA",
          n: key.publicJwk.n!,
          e: key.publicJwk.e!,
          kid: key.kid,
          alg: "RS256",
          use: "sig",
        })),
    };
  }

  /** RS256 signing with this ring (tokens name their key's kid). */
  signing(clock: { now(): number }): TokenSigning {
    return new RsaSigning(this, clock);
  }

  /** The signing key and its kid. */
  get signingKey(): { kid: string; key: CryptoKey } {
    return this.#keys.signing;
  }

  /** The public key a token's header names, while it is published; else jose's "no key". */
  keyFor(header: JWTHeaderParameters, nowMs: number): CryptoKey {
    const published = this.#keys.published.find((key) => key.kid === header.kid);
    const live = published !== undefined &&
      (published.retiresAt === null || Date.parse(published.retiresAt) > nowMs);
    const key = live ? this.#keys.verifying.get(published.kid) : undefined;
    if (key === undefined) throw new joseErrors.JWKSNoMatchingKey();
    return key;
  }

  protected override async adopt(text: string): Promise<void> {
    this.#keys = await loadKeys(text);
  }
}

class RsaSigning implements TokenSigning {
  readonly alg = "RS256";
  readonly #ring: RsaKeyRing;
  readonly #clock: { now(): number };

  constructor(ring: RsaKeyRing, clock: { now(): number }) {
    this.#ring = ring;
    this.#clock = clock;
  }

  get version(): number {
    return this.#ring.version;
  }

  sign(payload: JWTPayload): Promise<string> {
    const { kid, key } = this.#ring.signingKey;
    return new SignJWT(payload).setProtectedHeader({ alg: "RS256", typ: "JWT", kid }).sign(key);
  }

  async verify(
    jws: string,
    options: Omit<JWTVerifyOptions, "algorithms">,
  ): Promise<JWTPayload> {
    const verify = async () =>
      (await jwtVerify(jws, (header) => this.#ring.keyFor(header, this.#clock.now()), {
        ...options,
        algorithms: ["RS256"],
      })).payload;
    try {
      return await verify();
    } catch (error) {
      // A kid not known here may be a rotation another instance (or rotate-key) made: read
      // the keys again and try once more. A bad signature under a known kid is a forgery.
      if (!(error instanceof joseErrors.JWKSNoMatchingKey) || !await this.#ring.reloadFresh()) {
        throw error;
      }
      return await verify();
    }
  }
}
