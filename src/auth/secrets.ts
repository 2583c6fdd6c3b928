/**
 * The random secrets of cookie sessions and signed upload links: 32 random
 * bytes, base64url without padding, kept by their holder alone. The service
 * stores only a secret's SHA-256, so its database, backups and logs hold
 * nothing that works.
 */
import { createHash } from "node:crypto";

/** What a secret looks like; anything else is refused before a lookup. */
export const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function newSecret(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/** Lowercase hex SHA-256: what the database keeps of a secret. */
export function hashOfSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}
