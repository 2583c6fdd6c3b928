/**
 * What auth/ keeps, as the ports each metadata backend implements: token
 * metadata, pending signup codes and wallet sign-in nonces. Declared here
 * because db/ and auth/ never import each other: auth/ decides with these
 * records, db/sqlite/ and db/postgres/ store them, and both stand on domain/.
 */
import type { Scope } from "./vocabulary.ts";

/**
 * What the service keeps of a token it issued: never the token itself. A token
 * belongs to an e-mail address (and carries a daily quota in MiB) or to a
 * wallet (the quota comes from the wallet's USDC balance): exactly one of
 * `email` and `wallet` is set, and `quotaMb` is set with `email` only.
 */
export interface TokenRecord {
  jti: string;
  sub: string;
  email: string | null;
  /** EIP-55 address of a wallet sign-in. */
  wallet: string | null;
  label: string;
  scopes: Scope[];
  quotaMb: number | null;
  /** RFC 3339. */
  issuedAt: string;
  /** RFC 3339. */
  expiresAt: string;
  /** RFC 3339, or null while the token is live. */
  revokedAt: string | null;
}

/** A pending signup code of `--signup verify`, with the token fields it will mint. */
export interface SignupCodeRecord {
  email: string;
  /** The client that asked for the code (an IP key, see net/ip.ts): codes and tries are its own. */
  clientKey: string;
  /** Lowercase hex SHA-256 of the code; the code itself is only in the mail. */
  codeHash: string;
  label: string;
  scopes: Scope[];
  quotaMb: number;
  /** RFC 3339: when the code was sent. */
  createdAt: string;
  /** RFC 3339. */
  expiresAt: string;
  /** Wrong tries at this code. */
  attempts: number;
}

/** Token metadata: inserted at signup, its revocation state read on every request. */
export interface TokenRecords {
  insert(token: Omit<TokenRecord, "revokedAt">): Promise<void>;
  get(jti: string): Promise<TokenRecord | null>;
  /** Tokens newest first: a user's (sub), or every token (for the operator's `token list`). */
  list(options?: { sub?: string }): Promise<TokenRecord[]>;
  /** "unknown" when this service never issued the jti; otherwise its revocation time or null. */
  revocationOf(jti: string): Promise<"unknown" | string | null>;
  /** Marks a token revoked; a token revoked before keeps its first revocation time. */
  revoke(jti: string, at: string): Promise<void>;
}

/** Pending signup codes (`--signup verify`): one per address and client (the client that asked). */
export interface SignupCodeRecords {
  /** Stores a client's pending code for an address, replacing that client's earlier one. */
  put(record: SignupCodeRecord): Promise<void>;
  get(email: string, clientKey: string): Promise<SignupCodeRecord | null>;
  countAttempt(email: string, clientKey: string): Promise<void>;
  /** True when this call removed the code (so of two racing redemptions, one wins). */
  delete(email: string, clientKey: string): Promise<boolean>;
  /** Removes this code only: a newer code sent meanwhile stays. */
  deleteCode(email: string, clientKey: string, codeHash: string): Promise<void>;
  /** Forgets every code expired by `now` (RFC 3339). */
  purgeExpired(now: string): Promise<void>;
}

/** Sign-in nonces of the wallet tier: single use, consumed by one DELETE. */
export interface WalletNonceRecords {
  insert(nonce: string, expiresMs: number): Promise<void>;
  /** True while the nonce was issued, is unspent and has not expired. */
  isLive(nonce: string, nowMs: number): Promise<boolean>;
  /** Spends a live nonce; false when it was unknown, spent or expired. */
  consume(nonce: string, nowMs: number): Promise<boolean>;
  /** Forgets nonces that expired unspent; returns how many. */
  pruneExpired(nowMs: number): Promise<number>;
}

/**
 * The page's cookie sessions: a session is the SHA-256 of its cookie's secret
 * (the secret itself is only in the browser's cookie jar), the token it acts
 * as, and when it ends (the token's expiry). A leaked database holds no
 * cookie.
 */
export interface SessionRecords {
  insert(session: { idHash: string; jti: string; expiresMs: number }): Promise<void>;
  /** The jti of a live session, or null when it is unknown, ended or expired. */
  jtiOf(idHash: string, nowMs: number): Promise<string | null>;
  /** Ends a session; true when there was one. */
  delete(idHash: string): Promise<boolean>;
  /** Forgets sessions expired by `nowMs`; returns how many. */
  pruneExpired(nowMs: number): Promise<number>;
}

/** A signed upload link's terms, as POST /api/upload-links minted it. */
export interface UploadLinkRecord {
  /** Lowercase hex SHA-256 of the link's secret; the secret is only in the link's URL. */
  idHash: string;
  /** The owner's token: the upload is counted as its upload. */
  jti: string;
  cid: string;
  size: number;
  contentType: string;
  filename: string | null;
  expiresMs: number;
}

/** Signed upload links: single use, spent by one DELETE. */
export interface UploadLinkRecords {
  insert(link: UploadLinkRecord): Promise<void>;
  /** The link while it is unspent and unexpired; null otherwise. */
  get(idHash: string, nowMs: number): Promise<UploadLinkRecord | null>;
  /** Spends a live link; false when it was unknown, spent or expired (of two racing, one wins). */
  consume(idHash: string, nowMs: number): Promise<boolean>;
  /** Forgets links expired by `nowMs`; returns how many. */
  pruneExpired(nowMs: number): Promise<number>;
}
