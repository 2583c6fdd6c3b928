/**
 * The authenticator of the service. Tokens are issued from issue 3 on; until
 * then any credentials are refused as invalid, and requests without them are
 * sponsored.
 */
import { ApiError } from "../errors.ts";
import type { Authenticator } from "./caller.ts";
import { findCredentials } from "./credentials.ts";

export function createAuthenticator(): Authenticator {
  return {
    authenticate(request, url) {
      const credentials = findCredentials(request, url);
      if (credentials === null) return Promise.resolve(null);
      return Promise.reject(new ApiError("invalid_token", "Token is invalid or expired"));
    },
  };
}
