/**
 * The service's own vocabulary, shared by every layer: the database stores
 * these values, auth and limits decide with them, handlers render them. It
 * imports nothing, so no layer has to import another to name them.
 */

/** What a token may do (the interface's scope table). */
export const SCOPES = ["put", "get", "list", "pin"] as const;
export type Scope = typeof SCOPES[number];

/** Upload tiers: per-file and daily caps and the deal term depend on the tier. */
export const TIERS = ["sponsored", "token", "wallet"] as const;
export type Tier = typeof TIERS[number];
