/**
 * `--signup verify`: a token is minted only for whoever can read the
 * address's mail. Signup stores a one-time code (its SHA-256, never the code)
 * with the token fields asked for and mails the code; verify exchanges the
 * code for those fields once. A code is valid for 15 minutes and 5 tries; a
 * new signup for the same address replaces the pending code.
 */
import { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import { toRfc3339 } from "../clock.ts";
import type { Clock } from "../clock.ts";
import type { SignupCodeRecord } from "../domain.ts";
import { ApiError } from "../errors.ts";
import { MailUnavailableError } from "../mail/mailer.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { MintInput } from "./tokens.ts";

export const CODE_DIGITS = 8;
export const CODE_TTL_MS = 15 * 60_000;
export const MAX_CODE_ATTEMPTS = 5;

/** Where pending codes are kept (db/signup_code_records.ts in this service). */
export interface SignupCodeStore {
  /** Stores the pending code of an address, replacing any earlier one. */
  put(record: Omit<SignupCodeRecord, "attempts">): void;
  get(email: string): SignupCodeRecord | null;
  countAttempt(email: string): void;
  /** True when this call removed the code (so of two racing redemptions, one wins). */
  delete(email: string): boolean;
}

export interface SignupVerificationOptions {
  records: SignupCodeStore;
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

  /** Stores a new code for fields.email and mails it; 503 mail_unavailable if it cannot be sent. */
  async sendCode(fields: MintInput): Promise<void> {
    const { records, mailer, clock, baseUrl } = this.#options;
    const code = randomCode();
    records.put({
      email: fields.email,
      codeHash: hashOf(code),
      label: fields.label,
      scopes: [...fields.scopes],
      quotaMb: fields.quotaMb,
      expiresAt: toRfc3339(clock.now() + CODE_TTL_MS),
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
      // A code nobody received must not stay usable.
      records.delete(fields.email);
      if (error instanceof MailUnavailableError) {
        throw new ApiError("mail_unavailable", "The mail server cannot be reached; try later", {
          cause: error,
          headers: { "retry-after": "60" },
        });
      }
      throw error;
    }
  }

  /** The fields the code was issued for, once; 400 invalid_code otherwise. */
  redeem(email: string, code: string): MintInput {
    const { records, clock } = this.#options;
    const address = email.trim().toLowerCase();
    const pending = records.get(address);
    if (pending === null) throw invalidCode();
    if (Date.parse(pending.expiresAt) <= clock.now()) {
      records.delete(address);
      throw invalidCode();
    }
    if (!sameHash(hashOf(code.trim()), pending.codeHash)) {
      if (pending.attempts + 1 >= MAX_CODE_ATTEMPTS) records.delete(address);
      else records.countAttempt(address);
      throw invalidCode();
    }
    // Deleting is the redemption: of two requests racing with the right code, one wins.
    if (!records.delete(address)) throw invalidCode();
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
