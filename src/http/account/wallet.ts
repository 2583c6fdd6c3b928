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
import { JSON_BODY_ERRORS } from "../docs/route_doc.ts";
import type { RouteDoc } from "../docs/route_doc.ts";

export interface WalletDeps {
  /** null: this server has no wallet tier. */
  signIn: WalletSignIn | null;
  nonceLimit: WindowLimit;
  databaseIsPersistent: boolean;
}

export const getWalletNonceDoc: RouteDoc = {
  operationId: "getWalletNonce",
  summary: "A single-use nonce for a Sign-In with Ethereum message (wallet tier)",
  description: "Valid for 10 minutes, for one sign-in; limited per client IP per hour " +
    "(429 with Retry-After). 503 wallet_unavailable when this server has no wallet tier.",
  auth: "public",
  responses: [{ status: 200, description: "A new nonce", body: { json: "WalletNonce" } }],
  errors: ["rate_limited", "wallet_unavailable", "storage_offline"],
};

export const signInWithWalletDoc: RouteDoc = {
  operationId: "signInWithWallet",
  summary: "Exchange a signed EIP-4361 message for a 24-hour wallet token",
  description: "The message must name this server (domain = host of the base URL, uri = " +
    "the base URL), its chain id, a nonce from GET /api/auth/wallet/nonce, and an " +
    "expirationTime at most 10 minutes ahead; the signature is the address's " +
    "personal_sign of it (contract wallets: ERC-1271/ERC-6492). Any mismatch is 401 " +
    "invalid_signature, and the nonce is spent by the first try that names it. " +
    "Uploads with the token are in the wallet tier: the daily cap is the address's " +
    "USDC balance × the server's bytes per USDC.",
  auth: "public",
  requestBody: {
    description: "The signed message",
    body: { json: "WalletSignInRequest" },
  },
  responses: [{
    status: 201,
    description: "Signed in; the token is in this answer only",
    body: { json: "WalletSignInResult" },
  }],
  errors: [
    ...JSON_BODY_ERRORS,
    "invalid_request",
    "invalid_signature",
    "wallet_unavailable",
    "storage_offline",
  ],
};

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
