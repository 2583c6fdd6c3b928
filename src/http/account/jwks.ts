/**
 * GET /.well-known/jwks.json — the public keys that verify this server's
 * tokens under --token-alg RS256 (auth/rsa_keys.ts): the signing key's and
 * every earlier key's until the last token it signed has expired, so anyone
 * verifies a token with a stock JOSE library (by the `kid` in its header).
 * Before answering it reads the keys again (ten reads a second at most, shared
 * by the requests waiting for it), so with instances sharing a database each
 * publishes a new key as soon as any can sign with it. Under HS256 there is no public key: 404 not_found.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { RsaKeyRing } from "../../auth/rsa_keys.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";

export const JWKS_PATH = "/.well-known/jwks.json";

export function createJwksHandler(deps: { rsaKeys: RsaKeyRing | null; clock: Clock }): Handler {
  return async () => {
    if (deps.rsaKeys === null) {
      throw new ApiError(
        "not_found",
        "This server signs tokens with HS256 (a secret key): it has no public keys to publish",
      );
    }
    // A verifier asks again when it meets a kid it does not know: a rotation made through
    // another instance (or rotate-key) is read now, not at the next reload.
    await deps.rsaKeys.reloadFresh();
    // A verifier may keep the set a few minutes: a new key is also found by its unknown kid.
    return jsonResponse(200, deps.rsaKeys.jwks(deps.clock.now()), {
      "cache-control": "public, max-age=300",
    });
  };
}
