/**
 * GET /api/auth/wallet/nonce and POST /api/auth/wallet — Sign-In with
 * Ethereum for the wallet tier (auth/wallet_sign_in.ts has the rules).
 *
 * Nonces are free to ask for, so they are limited per client IP per hour,
 * and each one is a row in SQLite until it is spent or expires. A server
 * without --wallet-rpc-url has no wallet tier: both answer 503
 * wallet_unavailable.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { WalletSignIn } from "../../auth/wallet_sign_in.ts";
import { MAX_MESSAGE_CHARS, MAX_SIGNATURE_CHARS } from "../../auth/wallet_sign_in_limits.ts";
import type { WindowLimit } from "../../limits/window_limit.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { WalletNonce } from "../../kernel/wire.ts";
import { requirePersistentTokens } from "./signup.ts";

export interface WalletDeps {
  /** null: this server has no wallet tier. */
  signIn: WalletSignIn | null;
  nonceLimit: WindowLimit;
  databaseIsPersistent: boolean;
}

export function createWalletNonceHandler(deps: WalletDeps): Handler {
  return async (request, context) => {
    const signIn = requireWalletTier(deps);
    requirePersistentTokens(deps.databaseIsPersistent);
    // HEAD says whether nonces are to be had; it neither stores one nor counts against the limit.
    if (request.method === "HEAD") return jsonResponse(200, {});
    const slot = deps.nonceLimit.acquire(context.clientKey);
    if (!slot.ok) {
      throw new ApiError("rate_limited", "Too many sign-in nonces for this address; retry later", {
        headers: { "retry-after": String(slot.retryAfterSeconds) },
      });
    }
    const nonce: WalletNonce = await signIn.issueNonce();
    return jsonResponse(200, nonce);
  };
}

export function createWalletSignInHandler(deps: WalletDeps): Handler {
  return async (request, context) => {
    if (deps.signIn === null) await request.body?.cancel().catch(() => {});
    const signIn = requireWalletTier(deps);
    const { message, signature } = await context.readJson();
    if (typeof message !== "string" || typeof signature !== "string") {
      throw new ApiError("invalid_request", "message and signature (both strings) are required");
    }
    if (message.length > MAX_MESSAGE_CHARS || signature.length > MAX_SIGNATURE_CHARS) {
      throw new ApiError(
        "invalid_request",
        `message may have at most ${MAX_MESSAGE_CHARS} characters, signature ` +
          `${MAX_SIGNATURE_CHARS}`,
      );
    }
    requirePersistentTokens(deps.databaseIsPersistent);
    const result = await signIn.signIn(message, signature);
    context.logFields.caller = "wallet-sign-in";
    return jsonResponse(201, result);
  };
}

function requireWalletTier(deps: WalletDeps): WalletSignIn {
  if (deps.signIn === null) {
    throw new ApiError("wallet_unavailable", "This server has no wallet tier");
  }
  return deps.signIn;
}
