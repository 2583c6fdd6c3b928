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
import { JSON_BODY_ERRORS } from "../docs/route_doc.ts";
import type { RouteDoc } from "../docs/route_doc.ts";

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

export const signupDoc: RouteDoc = {
  operationId: "signup",
  summary: "Mint a token for an e-mail address (or mail a code to, under --signup verify)",
  description: "Depends on the server's signup mode. open: 201 with the token. verify: " +
    "202, and a one-time code is mailed to the address; POST /api/auth/signup/verify " +
    "exchanges it for the token. closed: 403 signup_closed. The same e-mail always gets " +
    "the same userId. Limited per client IP per hour (429 with Retry-After).",
  auth: "public",
  requestBody: { description: "Who the token is for", body: { json: "SignupRequest" } },
  responses: [{
    status: 201,
    description: "Created (--signup open); the token is in this answer only",
    body: { json: "SignupResult" },
  }, {
    status: 202,
    description: "A code was mailed to the address (--signup verify)",
    body: { json: "SignupVerificationSent" },
  }],
  errors: [
    ...JSON_BODY_ERRORS,
    "invalid_email",
    "invalid_label",
    "invalid_scopes",
    "invalid_quota",
    "signup_closed",
    "rate_limited",
    "mail_unavailable",
    "storage_offline",
  ],
};

export const verifySignupDoc: RouteDoc = {
  operationId: "verifySignup",
  summary: "Exchange a mailed signup code for the token (--signup verify)",
  description: "A code works once, for 15 minutes and at most 5 wrong tries, from the client " +
    "(IP address, IPv6 /64) that asked for it; that client's next signup for the address " +
    "replaces it with a fresh code and fresh tries, and nobody else's signups or tries touch it.",
  auth: "public",
  requestBody: {
    description: "The address and its code",
    body: { json: "SignupVerifyRequest" },
  },
  responses: [{
    status: 201,
    description: "Created; the token is in this answer only",
    body: { json: "SignupResult" },
  }],
  errors: [...JSON_BODY_ERRORS, "invalid_request", "invalid_code", "signup_closed"],
};

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
