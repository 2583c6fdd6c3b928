/**
 * `--signup verify`: a token is minted only for whoever can read the
 * address's mail. Signup stores a one-time code (its SHA-256, never the code)
 * with the token fields asked for and mails the code; verify exchanges the
 * code for those fields once.
 *
 * Guessing is bounded per address, not per code: a new code keeps the wrong
 * tries of the one it replaces, so an address gets at most 5 until a code
 * expires unused (15 minutes after it was sent), and a new code at most once
 * a minute. So 8 digits cannot
 * be worn down by signing up again, and nobody can flood an inbox.
 */
import { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import { toRfc3339 } from "../clock.ts";
import type { Clock } from "../clock.ts";
import type { SignupCodeRecords } from "../domain.ts";
import { ApiError } from "../errors.ts";
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
   * Stores a new code for fields.email and mails it. 429 while the address must
   * wait (a code sent less than a minute ago, or its tries used up), 503
   * mail_unavailable when the mail cannot be sent.
   */
  async sendCode(fields: MintInput): Promise<void> {
    const { records, mailer, clock, baseUrl } = this.#options;
    const now = clock.now();
    await records.purgeExpired(toRfc3339(now));
    const pending = await records.get(fields.email);
    if (pending !== null) {
      const waitMs = Math.max(
        Date.parse(pending.createdAt) + RESEND_AFTER_MS - now,
        pending.attempts >= MAX_CODE_ATTEMPTS ? Date.parse(pending.expiresAt) - now : 0,
      );
      if (waitMs > 0) {
        throw new ApiError(
          "rate_limited",
          "A code was sent to this address just now, or its tries are used up; try again later",
          { headers: { "retry-after": String(Math.ceil(waitMs / 1000)) } },
        );
      }
    }
    const code = randomCode();
    const codeHash = hashOf(code);
    await records.put({
      email: fields.email,
      codeHash,
      label: fields.label,
      scopes: [...fields.scopes],
      quotaMb: fields.quotaMb,
      createdAt: toRfc3339(now),
      expiresAt: toRfc3339(now + CODE_TTL_MS),
      // Wrong tries carry over to the new code until a code expires unused.
      attempts: pending?.attempts ?? 0,
    });
    try {
      await mailer.send({
        to: fields.email,
        subject: `Your sign-up code: ${code}`,
        text: `Your code to finish signing up at ${baseUrl} is ${code}.\n\n` +
          `It works once, for ${CODE_TTL_MS / 60_000} minutes. If you did not ask for it, ` +
          `ignore this mail: nothing happens without the code.\n`,
      });
    } catch (error) {
      // A code nobody received must not stay usable (a newer one sent meanwhile stays).
      await records.deleteCode(fields.email, codeHash);
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
  async redeem(email: string, code: string): Promise<MintInput> {
    const { records, clock } = this.#options;
    const address = email.trim().toLowerCase();
    const pending = await records.get(address);
    if (
      pending === null || Date.parse(pending.expiresAt) <= clock.now() ||
      pending.attempts >= MAX_CODE_ATTEMPTS
    ) {
      throw invalidCode();
    }
    if (!sameHash(hashOf(code.trim()), pending.codeHash)) {
      await records.countAttempt(address);
      throw invalidCode();
    }
    // Deleting is the redemption: of two requests racing with the right code, one wins.
    if (!await records.delete(address)) throw invalidCode();
    return {
      email: pending.email,
      label: pending.label,
      scopes: pending.scopes,
      quotaMb: pending.quotaMb,
    };
  }
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
    "The code is wrong, expired or used up; sign up again to get a new one",
  );
}
