/**
 * The fields a token is minted with, as a person asks for them (signup body,
 * or the operator's `token mint`): checked once here so both agree. The
 * first bad field answers, with the code clients match on.
 */
import { ApiError } from "../kernel/errors.ts";
import { SCOPES } from "../domain/vocabulary.ts";
import type { Scope } from "../domain/vocabulary.ts";

export interface SignupFields {
  email: string;
  label: string;
  scopes: Scope[];
  quotaMb: number;
}

const EMAIL =
  /^[^\s@"(),:;<>[\\\]]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;
const MAX_LABEL_CHARS = 64;

/** Validates a signup body; the first bad field answers. */
export function parseSignupFields(body: Record<string, unknown>, maxQuotaMb: number): SignupFields {
  const { email, label, scopes, quotaMb } = body;
  if (typeof email !== "string") throw new ApiError("invalid_email", "email is required");
  const normalized = email.trim().toLowerCase();
  if (normalized.length > 254 || !EMAIL.test(normalized)) {
    throw new ApiError("invalid_email", "email must be an address like name@example.org");
  }
  if (typeof label !== "string") throw new ApiError("invalid_label", "label is required");
  const labelChars = [...label].length;
  // deno-lint-ignore no-control-regex
  if (labelChars < 1 || labelChars > MAX_LABEL_CHARS || /[\u0000-\u001f\u007f]/.test(label)) {
    throw new ApiError(
      "invalid_label",
      `label must be 1 to ${MAX_LABEL_CHARS} characters without control characters`,
    );
  }
  let chosenScopes: Scope[] = [...SCOPES];
  if (scopes !== undefined) {
    if (
      !Array.isArray(scopes) || scopes.length === 0 ||
      !scopes.every((s) => (SCOPES as readonly unknown[]).includes(s))
    ) {
      throw new ApiError(
        "invalid_scopes",
        `scopes must be a non-empty array of ${SCOPES.map((s) => `"${s}"`).join(", ")}`,
      );
    }
    // Keep the canonical order and drop repeats.
    chosenScopes = SCOPES.filter((s) => scopes.includes(s));
  }
  let chosenQuota = maxQuotaMb;
  if (quotaMb !== undefined) {
    if (
      !Number.isSafeInteger(quotaMb) || (quotaMb as number) < 1 || (quotaMb as number) > maxQuotaMb
    ) {
      throw new ApiError("invalid_quota", `quotaMb must be a whole number from 1 to ${maxQuotaMb}`);
    }
    chosenQuota = quotaMb as number;
  }
  return { email: normalized, label, scopes: chosenScopes, quotaMb: chosenQuota };
}
