/**
 * Where the RSA keys of `--token-alg RS256` are kept, as one port with two
 * places: the data directory's rsa-keys.json (auth/rsa_key_file.ts) for a
 * single box, and a PostgreSQL table (db/postgres/rsa_keys.ts) that every
 * instance sharing the database reads, so they all sign and verify with the
 * same keys and a rotation through any one reaches them all. The key ring
 * (auth/rsa_keys.ts) reads, rotates and checks the keys the same way
 * whichever place holds them.
 */

/** A JSON Web Key's members (RFC 7517), as WebCrypto exports an RSA key. */
export type JwkMembers = { kty?: string; n?: string; e?: string } & Record<string, unknown>;

/** One key of the ring, as kept. */
export interface StoredRsaKey {
  /** The RFC 7638 thumbprint of the public key, named in each token's header. */
  kid: string;
  createdAt: string;
  /** RFC 3339: no longer published (nor accepted) from then on; null for the signing key. */
  retiresAt: string | null;
  publicJwk: JwkMembers;
  /** The signing key's private half (the first key's only). */
  privateJwk?: JwkMembers;
}

export interface RsaKeyStore {
  /** The file's path, or "the database at host/name", for messages. */
  readonly where: string;
  /** Whether every instance reads this one place (a rotation reaches them all). */
  readonly shared: boolean;
  /** The keys, the signing key first; null while there are none. Nothing is made. */
  read(): Promise<StoredRsaKey[] | null>;
  /**
   * Takes `keys` when there are none yet (a first start, a migration): of
   * writers at once, one wins. Keys already there are never replaced, since
   * instances may be signing with them. Answers whether it took them, and
   * the keys in force.
   */
  adopt(keys: StoredRsaKey[]): Promise<{ adopted: boolean; keys: StoredRsaKey[] }>;
  /**
   * Replaces the keys with `change(current)` (current: [] when none), with
   * no other write between the read and the write (a rotation).
   */
  update(change: (keys: StoredRsaKey[]) => StoredRsaKey[]): Promise<void>;
}
