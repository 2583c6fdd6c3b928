import { ApiError } from "../kernel/errors.ts";
import type { Caller, TokenCaller } from "./caller.ts";
import type { Scope } from "../domain/vocabulary.ts";

/** Throws 403 insufficient_scope unless the token carries the scope. */
export function requireScope(caller: TokenCaller, scope: Scope): void {
  if (!caller.scopes.includes(scope)) {
    throw new ApiError("insufficient_scope", `This token lacks the "${scope}" scope`, {
      headers: {
        "www-authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
      },
    });
  }
}

/** Narrows a caller to a token holder: 401 when the request carried no token. */
export function requireTokenCaller(caller: Caller): TokenCaller {
  if (caller.kind !== "token") {
    throw new ApiError(
      "invalid_token",
      "This endpoint needs a token: send Authorization: Bearer <token>",
    );
  }
  return caller;
}

/** A token caller that carries the scope: 401 without a token, 403 without the scope. */
export function requireTokenScope(caller: Caller, scope: Scope): TokenCaller {
  const tokenCaller = requireTokenCaller(caller);
  requireScope(tokenCaller, scope);
  return tokenCaller;
}
