/**
 * Sign-In with Ethereum (EIP-4361) for the wallet tier: a nonce from this
 * server, a message signed by the wallet, a 24-hour wallet token back.
 *
 * The message must be for this server and this moment: its domain is the
 * host of the base URL, its uri the base URL, its chain id the configured
 * chain, its nonce one this server issued and nobody spent, and it must carry
 * an expiration time at most ten minutes ahead. Any mismatch, and a signature
 * that is not the address's, is 401 invalid_signature with a message that
 * says which check failed: the client's author needs to know, and none of it
 * is secret. The cheap checks run first; the nonce is spent (in one DELETE,
 * so a signed message works once) by the first sign-in whose message passed
 * them, whether its signature turns out right or wrong.
 */
import { getAddress, isAddress, isHex } from "viem";
import type { Address, Hex } from "viem";
import { parseSiweMessage } from "viem/siwe";
import type { Clock } from "../kernel/clock.ts";
import { toRfc3339 } from "../kernel/clock.ts";
import type { WalletNonceRecords } from "../domain/auth_records.ts";
import { ApiError } from "../kernel/errors.ts";
import { siweLayoutProblem } from "./siwe_layout.ts";
import type { TokenService } from "./tokens.ts";
import type { WalletNonce, WalletSignInResult } from "../kernel/wire.ts";

/** How long a nonce may wait for its sign-in, and how far ahead a message may expire. */
export const NONCE_LIFETIME_MS = 10 * 60_000;
/** A wallet's clock may run this far ahead of ours (issuedAt, notBefore). */
const CLOCK_SKEW_MS = 60_000;

/** Who decides whether a signature is the address's (wallet/chain.ts). */
export interface SignatureVerifier {
  verifySignature(input: { address: Address; message: string; signature: Hex }): Promise<boolean>;
}

export interface WalletSignInOptions {
  /** Where nonces are kept. */
  nonces: WalletNonceRecords;
  tokens: TokenService;
  verifier: SignatureVerifier;
  clock: Clock;
  /** The server's public base URL, without a trailing slash. */
  baseUrl: string;
  chainId: number;
}

export class WalletSignIn {
  readonly #options: WalletSignInOptions;
  readonly #domain: string;
  readonly #scheme: string;

  constructor(options: WalletSignInOptions) {
    this.#options = options;
    const base = new URL(options.baseUrl);
    this.#domain = base.host;
    this.#scheme = base.protocol.slice(0, -1);
  }

  /** A new single-use nonce: 128 random bits as 32 hex digits (SIWE wants letters and digits). */
  async issueNonce(): Promise<WalletNonce> {
    const { nonces, clock } = this.#options;
    const now = clock.now();
    await nonces.pruneExpired(now);
    const nonce = crypto.getRandomValues(new Uint8Array(16)).toHex();
    const expiresMs = now + NONCE_LIFETIME_MS;
    await nonces.insert(nonce, expiresMs);
    return { nonce, expiresAt: toRfc3339(expiresMs) };
  }

  /** Checks the signed message and mints the wallet's token, or throws 401 invalid_signature. */
  async signIn(message: string, signature: string): Promise<WalletSignInResult> {
    const { nonces, clock, verifier, tokens } = this.#options;
    if (!isHex(signature, { strict: true }) || signature.length < 4) {
      throw refused("signature must be 0x-prefixed hex");
    }
    const { address, nonce } = this.#checkMessage(message, clock.now());
    if (!await nonces.isLive(nonce, clock.now())) {
      throw refused("nonce is unknown, already used or expired; get a new one");
    }
    const valid = await verifier.verifySignature({ address, message, signature });
    // Spent either way: a wrong signature may have cost an RPC call (contract wallets), and
    // one nonce must not pay for endless tries. Whoever spends it first wins a race.
    if (!await nonces.consume(nonce, clock.now())) {
      throw refused("nonce is unknown, already used or expired; get a new one");
    }
    if (!valid) throw refused(`signature is not ${address}'s signature of this message`);
    const { token, record } = await tokens.mintForWallet(address);
    return {
      token,
      userId: record.sub,
      wallet: address,
      scopes: record.scopes,
      expiresAt: record.expiresAt,
      jti: record.jti,
    };
  }

  /** The message's fields as this server requires them; its address EIP-55 checksummed. */
  #checkMessage(message: string, now: number): { address: Address; nonce: string } {
    const problem = siweLayoutProblem(message);
    if (problem !== null) {
      throw refused(`message is not an EIP-4361 (Sign-In with Ethereum) message: ${problem}`);
    }
    const fields = parseSiweMessage(message);
    if (fields.address === undefined || fields.nonce === undefined || fields.uri === undefined) {
      throw refused("message is not an EIP-4361 (Sign-In with Ethereum) message");
    }
    if (!isAddress(fields.address) || getAddress(fields.address) !== fields.address) {
      throw refused("message's address must be EIP-55 checksummed");
    }
    if (fields.version !== "1") throw refused("message's version must be 1");
    if (fields.domain !== this.#domain) {
      throw refused(`message's domain must be ${this.#domain}`);
    }
    if (fields.scheme !== undefined && fields.scheme !== this.#scheme) {
      throw refused(`message's scheme must be ${this.#scheme}`);
    }
    const base = this.#options.baseUrl;
    if (fields.uri !== base && fields.uri !== `${base}/`) {
      throw refused(`message's uri must be ${base}`);
    }
    if (fields.chainId !== this.#options.chainId) {
      throw refused(`message's chain id must be ${this.#options.chainId}`);
    }
    if (!/^[a-zA-Z0-9]{8,96}$/.test(fields.nonce)) {
      throw refused("message's nonce must be 8 to 96 letters or digits");
    }
    const issuedAt = timeOf(fields.issuedAt);
    const expiresAt = timeOf(fields.expirationTime);
    // Not older than a nonce can be (plus skew): a message is made for a nonce just issued.
    if (
      issuedAt === null || issuedAt > now + CLOCK_SKEW_MS ||
      issuedAt < now - NONCE_LIFETIME_MS - CLOCK_SKEW_MS
    ) {
      throw refused("message's issued-at time is missing, malformed, too old or in the future");
    }
    if (expiresAt === null || expiresAt > now + NONCE_LIFETIME_MS) {
      throw refused("message needs an expiration time at most 10 minutes ahead");
    }
    if (expiresAt <= now) throw refused("message has expired");
    if (fields.notBefore !== undefined) {
      const notBefore = timeOf(fields.notBefore);
      if (notBefore === null || notBefore > now + CLOCK_SKEW_MS) {
        throw refused("message's not-before time is malformed or not reached yet");
      }
    }
    return { address: getAddress(fields.address), nonce: fields.nonce };
  }
}

/** A parsed SIWE time as ms; null when absent or not an RFC 3339 time. */
function timeOf(date: Date | undefined): number | null {
  const ms = date?.getTime();
  return ms === undefined || Number.isNaN(ms) ? null : ms;
}

function refused(reason: string): ApiError {
  return new ApiError("invalid_signature", `Wallet sign-in refused: ${reason}`);
}
