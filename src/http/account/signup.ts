/**
 * POST /api/auth/signup and POST /api/auth/signup/verify — minting a token
 * over HTTP, as the operator's --signup mode allows:
 *
 *   open    signup answers 201 with the token (the interface's behaviour: anyone
 *           can mint a token for any e-mail, fine for local and testnet use);
 *   verify  signup mails a one-time code and answers 202; verify exchanges the
 *           code for the token (201), so only the address's owner gets one;
 *   closed  both answer 403 signup_closed; the operator mints with `token mint`.
 *
 * Signups are limited per client IP per hour in every mode (a verify-mode
 * signup counts when its mail is sent). The token is in the answer once and
 * never stored; the same e-mail always gets the same userId.
 */
import { ApiError } from "../../kernel/errors.ts";
import { parseSignupFields } from "../../auth/signup_fields.ts";
import { signupResultOf } from "../../auth/signup_result.ts";
import type { SignupVerification } from "../../auth/signup_verification.ts";
import type { TokenService } from "../../auth/tokens.ts";
import type { SignupMode } from "../../config/mod.ts";
import type { WindowLimit } from "../../limits/window_limit.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { SignupVerificationSent } from "../../kernel/wire.ts";

export interface SignupDeps {
  mode: SignupMode;
  tokens: TokenService;
  /** Sends and redeems codes; present when mode is "verify". */
  verification: SignupVerification | null;
  signupLimit: WindowLimit;
  /** Highest quotaMb a token may carry. */
  maxQuotaMb: number;
  /** Tokens need a database that survives restarts. */
  databaseIsPersistent: boolean;
}

export function createSignupHandler(deps: SignupDeps): Handler {
  return async (request, context) => {
    if (deps.mode === "closed") {
      await request.body?.cancel().catch(() => {});
      throw signupClosed();
    }
    const fields = parseSignupFields(await context.readJson(), deps.maxQuotaMb);
    requirePersistentTokens(deps.databaseIsPersistent);
    const slot = deps.signupLimit.acquire(context.clientKey);
    if (!slot.ok) {
      throw new ApiError("rate_limited", "Too many signups from this address; try again later", {
        headers: { "retry-after": String(slot.retryAfterSeconds) },
      });
    }
    context.logFields.caller = "signup";
    try {
      if (deps.mode === "verify") {
        if (deps.verification === null) throw new Error("verify mode without a verifier");
        await deps.verification.sendCode(fields, context.clientKey);
        const sent: SignupVerificationSent = { status: "verification_sent", email: fields.email };
        return jsonResponse(202, sent);
      }
      return jsonResponse(201, signupResultOf(await deps.tokens.mint(fields)));
    } catch (error) {
      slot.release();
      throw error;
    }
  };
}

export function createSignupVerifyHandler(deps: SignupDeps): Handler {
  return async (request, context) => {
    if (deps.mode === "closed") {
      await request.body?.cancel().catch(() => {});
      throw signupClosed();
    }
    const { email, code } = await context.readJson();
    if (typeof email !== "string" || typeof code !== "string" || email.length > 254) {
      throw new ApiError("invalid_request", "email and code (both strings) are required");
    }
    requirePersistentTokens(deps.databaseIsPersistent);
    // In open mode no code is ever sent, so none can be right.
    if (deps.verification === null) throw new ApiError("invalid_code", "No code was sent");
    const fields = await deps.verification.redeem(email, code, context.clientKey);
    context.logFields.caller = "signup";
    return jsonResponse(201, signupResultOf(await deps.tokens.mint(fields)));
  };
}

/** Tokens (and sign-in nonces) must outlive a restart: no data directory, no tokens. */
export function requirePersistentTokens(databaseIsPersistent: boolean): void {
  if (!databaseIsPersistent) {
    throw new ApiError("storage_offline", "Storage is offline; tokens cannot be issued now");
  }
}

function signupClosed(): ApiError {
  return new ApiError(
    "signup_closed",
    "This server does not issue tokens over HTTP; ask its operator for one",
  );
}
