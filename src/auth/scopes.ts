import { ApiError } from "../errors.ts";
import type { Scope, TokenCaller } from "./caller.ts";

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
