/**
 * The one authentication step every endpoint uses: no credentials means a
 * sponsored (anonymous) caller; credentials must be a live token.
 */
import { ApiError } from "../kernel/errors.ts";
import type { Authenticator } from "./caller.ts";
import { findCredentials } from "./credentials.ts";
import type { TokenService } from "./tokens.ts";

export function createAuthenticator(tokens: TokenService): Authenticator {
  return {
    authenticate(request, url) {
      const credentials = findCredentials(request, url);
      if (credentials === null) return Promise.resolve(null);
      if (credentials === "malformed") {
        return Promise.reject(
          new ApiError("invalid_token", "Authorization header must be: Bearer <token>"),
        );
      }
      return tokens.verify(credentials.token, { viaQuery: credentials.viaQuery });
    },
  };
}
