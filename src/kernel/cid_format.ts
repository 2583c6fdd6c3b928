/** The cid format every endpoint accepts: 8 to 80 letters or digits, any case. */
const CID_PATTERN = /^[a-z0-9]{8,80}$/i;

/**
 * Returns the canonical (lowercase) form of a cid, or null when it does not
 * match the interface's pattern. cids are stored and compared lowercased.
 *
 * @example normalizeCid("BAFKREI12345678") // "bafkrei12345678"
 */
export function normalizeCid(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined || !CID_PATTERN.test(raw)) return null;
  return raw.toLowerCase();
}
