/**
 * `--signup verify`: a token is minted only for whoever can read the
 * address's mail. Signup stores a one-time code (its SHA-256, never the code)
 * with the token fields asked for and mails the code; verify exchanges the
 * code for those fields once.
 *
 * Codes and their tries belong to an address and the client that asked (an
 * IPv4 address, an IPv6 /64): a code is redeemed from the client it was sent
 * for, with at most 5 wrong tries, and each client gets a new code for an
 * address at most once a minute, with fresh tries. So nobody can lock an
 * owner out (their wrong tries and new codes are their own; the owner's code
 * stays), and guessing 8 digits takes a new mailed code per 5 tries, a minute
 * apart, within the per-client signup limit.
 */
import { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import { toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import type { SignupCodeRecords } from "../domain/auth_records.ts";
import { ApiError } from "../kernel/errors.ts";
import { MailUnavailableError } from "../mail/mailer.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { MintInput } from "./tokens.ts";

export const CODE_DIGITS = 8;
export const CODE_TTL_MS = 15 * 60_000;
export const MAX_CODE_ATTEMPTS = 5;
/** Least time between two codes for one address. */
export const RESEND_AFTER_MS = 60_000;

export interface SignupVerificationOptions {
  /** Where pending codes are kept. */
  records: SignupCodeRecords;
  mailer: Mailer;
  clock: Clock;
  /** Named in the mail, so the reader knows which service sent the code. */
  baseUrl: string;
}

export class SignupVerification {
  readonly #options: SignupVerificationOptions;

  constructor(options: SignupVerificationOptions) {
    this.#options = options;
  }

  /**
   * Stores a new code for fields.email, asked for by clientKey, and mails it.
   * 429 while that client must wait (it was sent a code for the address less
   * than a minute ago), 503 mail_unavailable when the mail cannot be sent.
   */
  async sendCode(fields: MintInput, clientKey: string): Promise<void> {
    const { records, mailer, clock, baseUrl } = this.#options;
    const now = clock.now();
    await records.purgeExpired(toRfc3339(now));
    const pending = await records.get(fields.email, clientKey);
    const waitMs = pending === null ? 0 : Date.parse(pending.createdAt) + RESEND_AFTER_MS - now;
    if (waitMs > 0) {
      throw new ApiError(
        "rate_limited",
        "A code was sent to this address for you just now; use it, or try again in a minute",
        { headers: { "retry-after": String(Math.ceil(waitMs / 1000)) } },
      );
    }
    const code = randomCode();
    const codeHash = hashOf(code);
    await records.put({
      email: fields.email,
      clientKey,
      codeHash,
      label: fields.label,
      scopes: [...fields.scopes],
      quotaMb: fields.quotaMb,
      createdAt: toRfc3339(now),
      expiresAt: toRfc3339(now + CODE_TTL_MS),
      attempts: 0,
    });
    try {
      await mailer.send({
        to: fields.email,
        subject: `Your sign-up code: ${code}`,
        text: `Your code to finish signing up at ${baseUrl} is ${code}.\n\n` +
          `It works once, for ${CODE_TTL_MS / 60_000} minutes, on the page (or program) that ` +
          `asked for it from ${clientNameOf(clientKey)} at ${toRfc3339(now)}. If you did not ` +
          `ask for it, ignore this mail: nothing happens without the code.\n`,
      });
    } catch (error) {
      // A code nobody received must not stay usable (a newer one sent meanwhile stays).
      await records.deleteCode(fields.email, clientKey, codeHash);
      if (error instanceof MailUnavailableError) {
        throw new ApiError("mail_unavailable", "The mail server cannot be reached; try later", {
          cause: error,
          headers: { "retry-after": "60" },
        });
      }
      throw error;
    }
  }

  /**
   * The fields the code was issued for, once; 400 invalid_code otherwise. The
   * code is used up as it is redeemed, before the token is minted: if minting
   * then fails (a busy database), the person signs up again.
   */
  async redeem(email: string, code: string, clientKey: string): Promise<MintInput> {
    const { records, clock } = this.#options;
    const address = email.trim().toLowerCase();
    const pending = await records.get(address, clientKey);
    if (
      pending === null || Date.parse(pending.expiresAt) <= clock.now() ||
      pending.attempts >= MAX_CODE_ATTEMPTS
    ) {
      throw invalidCode();
    }
    if (!sameHash(hashOf(code.trim()), pending.codeHash)) {
      await records.countAttempt(address, clientKey);
      throw invalidCode();
    }
    // Deleting is the redemption: of two requests racing with the right code, one wins.
    if (!await records.delete(address, clientKey)) throw invalidCode();
    return {
      email: pending.email,
      label: pending.label,
      scopes: pending.scopes,
      quotaMb: pending.quotaMb,
    };
  }
}

/** "v4:203.0.113.7" → "203.0.113.7", "v6:2001:db8:0:1::/64" → "2001:db8:0:1::/64". */
function clientNameOf(clientKey: string): string {
  return clientKey.replace(/^(v4|v6|hop|peer):/, "");
}

function randomCode(): string {
  // Rejection sampling keeps every code equally likely.
  const limit = 10 ** CODE_DIGITS;
  const bound = Math.floor(2 ** 32 / limit) * limit;
  const word = new Uint32Array(1);
  do crypto.getRandomValues(word); while (word[0] >= bound);
  return String(word[0] % limit).padStart(CODE_DIGITS, "0");
}

function hashOf(code: string): string {
  return createHash("sha256").update(code).digest("hex");
}

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

function invalidCode(): ApiError {
  return new ApiError(
    "invalid_code",
    "The code is wrong, expired or used up, or was sent for another network; sign up again " +
      "to get a new one",
  );
}
