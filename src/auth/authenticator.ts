/**
 * The one authentication step every endpoint uses: no credentials means a
 * sponsored (anonymous) caller; credentials must be a live token, or the
 * session cookie of one (auth/sessions.ts). With `--query-token off` the
 * deprecated `?token=` form is refused, naming the header form.
 */
import { ApiError } from "../kernel/errors.ts";
import type { Authenticator } from "./caller.ts";
import { findCredentials } from "./credentials.ts";
import type { SessionService } from "./sessions.ts";
import type { TokenService } from "./tokens.ts";

export interface AuthenticatorOptions {
  tokens: TokenService;
  sessions: SessionService;
  /** False (--query-token off): ?token= is 401 invalid_token. */
  queryToken: boolean;
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { tokens, sessions } = options;
  return {
    authenticate(request, url) {
      const credentials = findCredentials(request, url);
      if (credentials === null) return Promise.resolve(null);
      if (credentials === "malformed") {
        return Promise.reject(
          new ApiError("invalid_token", "Authorization header must be: Bearer <token>"),
        );
      }
      if (credentials.via === "query" && !options.queryToken) {
        return Promise.reject(
          new ApiError(
            "invalid_token",
            "This server does not take the token in the query string (?token=); send it in " +
              "the header: Authorization: Bearer <token>",
          ),
        );
      }
      if (credentials.via === "cookie") return sessions.authenticate(credentials.token);
      return tokens.verify(credentials.token, { via: credentials.via });
    },
  };
}
