/**
 * The RSA key ring of `--token-alg RS256`: <data-dir>/rsa-keys.json, mode
 * 0600, made on first start. The first key signs (its private half is kept);
 * the others are earlier keys, public half only, each published until
 * `retiresAt`, the latest a token it signed can expire. `rotate-key` puts a
 * new 2048-bit key first and retires the one before, so tokens it signed
 * keep working (and verifying anywhere) until they expire. Every key's `kid`
 * is its RFC 7638 thumbprint, named in each token's header; GET
 * /.well-known/jwks.json publishes the live public keys. A running server
 * re-reads the file every few seconds, and at once (at most once a second)
 * when a token names a kid it does not know.
 */
import { calculateJwkThumbprint, errors as joseErrors, jwtVerify, SignJWT } from "jose";
import type { JWK, JWTHeaderParameters, JWTPayload, JWTVerifyOptions } from "jose";
import { writeFileAtomic } from "../kernel/fs/atomic_write.ts";
import { KeyFileError } from "./hmac_key.ts";
import type { Jwks } from "../kernel/wire.ts";
import type { TokenSigning } from "./token_signing.ts";
import { ReloadingKey } from "./key_reload.ts";
import { verifyReloading } from "./token_signing.ts";

const RSA = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;
export const MIN_RSA_BITS = 2048;

/** One key of the file. */
interface StoredKey {
  kid: string;
  createdAt: string;
  /** RFC 3339: no longer published (nor accepted) from then on; null for the signing key. */
  retiresAt: string | null;
  publicJwk: JWK;
  /** The signing key's private half (the first key's only). */
  privateJwk?: JWK;
}

interface KeyFile {
  keys: StoredKey[];
}

async function newStoredKey(nowMs: number): Promise<StoredKey> {
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

function writeKeyFile(path: string, file: KeyFile, ifExists: "replace" | "fail") {
  const text = JSON.stringify(file, null, 2) + "\n";
  return writeFileAtomic(path, new TextEncoder().encode(text), { mode: 0o600, ifExists });
}

/** Checks a key file's text: a signing key first, RSA keys of 2048 bits or more. */
function parseKeyFile(text: string, path: string): KeyFile {
  let file: KeyFile;
  try {
    file = JSON.parse(text);
  } catch {
    throw new KeyFileError(`Cannot use RSA key file ${path}: it is not JSON`);
  }
  const keys = Array.isArray(file?.keys) ? file.keys : [];
  const bits = (key: StoredKey) =>
    typeof key?.publicJwk?.n === "string" ? key.publicJwk.n.length * 6 : 0;
  if (keys.length === 0 || keys[0].privateJwk === undefined) {
    throw new KeyFileError(`Cannot use RSA key file ${path}: its first key has no private half`);
  }
  if (keys.some((key) => bits(key) < MIN_RSA_BITS || typeof key.kid !== "string")) {
    throw new KeyFileError(
      `Cannot use RSA key file ${path}: every key needs a kid and ${MIN_RSA_BITS} bits or more`,
    );
  }
  return file;
}

/**
 * Puts a new signing key first and keeps the one before (public half only)
 * for `keepPublicMs` (the longest a token lives); drops keys retired by now.
 * A missing file gets its first key.
 */
export async function rotateRsaKeyFile(
  path: string,
  options: { nowMs: number; keepPublicMs: number },
): Promise<void> {
  let keys: StoredKey[] = [];
  try {
    keys = parseKeyFile(await Deno.readTextFile(path), path).keys;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const { nowMs, keepPublicMs } = options;
  const kept = keys.map((key): StoredKey =>
    key.retiresAt !== null ? key : {
      kid: key.kid,
      createdAt: key.createdAt,
      retiresAt: new Date(nowMs + keepPublicMs).toISOString(),
      publicJwk: key.publicJwk,
    }
  ).filter((key) => Date.parse(key.retiresAt!) > nowMs);
  await writeKeyFile(path, { keys: [await newStoredKey(nowMs), ...kept] }, "replace");
}

/** The keys in force: the signing key, and every public key by kid. */
interface LoadedKeys {
  text: string;
  signing: { kid: string; key: CryptoKey };
  published: StoredKey[];
  verifying: Map<string, CryptoKey>;
}

async function loadKeys(text: string, path: string): Promise<LoadedKeys> {
  const { keys } = parseKeyFile(text, path);
  const verifying = new Map<string, CryptoKey>();
  for (const key of keys) {
    verifying.set(
      key.kid,
      await crypto.subtle.importKey("jwk", key.publicJwk, RSA, false, ["verify"]),
    );
  }
  const key = await crypto.subtle.importKey("jwk", keys[0].privateJwk!, RSA, false, ["sign"]);
  return { text, signing: { kid: keys[0].kid, key }, published: keys, verifying };
}

/** The key ring a server signs and verifies RS256 tokens with. */
export class RsaKeyRing extends ReloadingKey {
  #keys: LoadedKeys;
  readonly #path: string;

  private constructor(path: string, keys: LoadedKeys) {
    super(keys.text, () => Deno.readTextFile(path));
    this.#path = path;
    this.#keys = keys;
  }

  /** Opens the ring at `path`, making it with one key when it is missing and may be made. */
  static async open(path: string, options: { createIfMissing: boolean }): Promise<RsaKeyRing> {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound) || !options.createIfMissing) {
        throw new KeyFileError(`Cannot read RSA key file ${path}: ${(error as Error).message}`);
      }
      try {
        await writeKeyFile(path, { keys: [await newStoredKey(Date.now())] }, "fail");
      } catch (createError) {
        if (!(createError instanceof Deno.errors.AlreadyExists)) throw createError;
      }
      text = await Deno.readTextFile(path);
    }
    return new RsaKeyRing(path, await loadKeys(text, path));
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
    this.#keys = await loadKeys(text, this.#path);
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
    return await verifyReloading(
      async () =>
        (await jwtVerify(jws, (header) => this.#ring.keyFor(header, this.#clock.now()), {
          ...options,
          algorithms: ["RS256"],
        })).payload,
      () => this.#ring.reloadAfterFailure(),
    );
  }
}
