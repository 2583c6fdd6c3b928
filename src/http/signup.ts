/**
 * POST /api/auth/signup — mints a token. No Authorization is used; the body
 * is {email, label, scopes?, quotaMb?}. The token is in the answer once and
 * never stored; the same e-mail always gets the same userId.
 */
import { ApiError } from "../errors.ts";
import { SCOPES } from "../domain.ts";
import type { Scope } from "../domain.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { WindowLimit } from "../limits/window_limit.ts";
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";
import type { SignupResult } from "./schemas/bodies.ts";

export interface SignupDeps {
  tokens: TokenService;
  signupLimit: WindowLimit;
  /** Highest quotaMb a token may carry. */
  maxQuotaMb: number;
  /** Tokens need a database that survives restarts. */
  databaseIsPersistent: boolean;
}

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

export function createSignupHandler(deps: SignupDeps): Handler {
  return async (_request, context) => {
    const fields = parseSignupFields(await context.readJson(), deps.maxQuotaMb);
    if (!deps.databaseIsPersistent) {
      throw new ApiError("storage_offline", "Storage is offline; tokens cannot be issued now");
    }
    const slot = deps.signupLimit.acquire(context.clientKey);
    if (!slot.ok) {
      throw new ApiError("rate_limited", "Too many signups from this address; try again later", {
        headers: { "retry-after": String(slot.retryAfterSeconds) },
      });
    }
    try {
      const { token, claims, record } = await deps.tokens.mint(fields);
      context.logFields.caller = "signup";
      const result: SignupResult = {
        token,
        userId: claims.sub,
        email: claims.email,
        scopes: claims.scopes,
        quotaMb: claims.quotaMb,
        expiresAt: record.expiresAt,
      };
      return jsonResponse(201, result);
    } catch (error) {
      slot.release();
      throw error;
    }
  };
}
