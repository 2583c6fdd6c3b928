/**
 * The caller's tokens.
 *
 * GET /api/tokens [list] — metadata of every token of the user, newest first,
 * revoked ones marked; never a token itself.
 *
 * POST /api/tokens/revoke — {jti}. A live token may always revoke itself;
 * revoking a sibling (same user) needs the `list` scope; another user's or an
 * unknown jti is 404, so the endpoint never tells whether a jti exists.
 * Idempotent: revoking again answers the first revocation time.
 */
import { ApiError } from "../../kernel/errors.ts";
import { toRfc3339 } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { TokenRecords } from "../../domain/auth_records.ts";
import { requireScope, requireTokenCaller, requireTokenScope } from "../../auth/scopes.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { RevokeResult, TokenInfo, TokenList } from "../../kernel/wire.ts";

export interface RevokeDeps {
  tokenRecords: TokenRecords;
  clock: Clock;
}

export function createRevokeHandler(deps: RevokeDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenCaller(await context.caller());
    const { jti } = await context.readJson();
    if (typeof jti !== "string" || jti === "" || jti.length > 128) {
      throw new ApiError("invalid_request", "jti (the id of the token to revoke) is required");
    }
    const target = await deps.tokenRecords.get(jti);
    if (target === null || target.sub !== caller.sub) {
      throw new ApiError("not_found", "No such token");
    }
    if (target.jti !== caller.jti) requireScope(caller, "list");
    if (target.revokedAt === null) {
      await deps.tokenRecords.revoke(jti, toRfc3339(deps.clock.now()));
    }
    // Set by the revocation above (or an earlier one).
    const revokedAt = (await deps.tokenRecords.get(jti))!.revokedAt!;
    return jsonResponse(200, { jti, revoked: true, revokedAt } satisfies RevokeResult);
  };
}

export function createTokenListHandler(deps: RevokeDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenScope(await context.caller(), "list");
    const tokens = (await deps.tokenRecords.list({ sub: caller.sub })).map((t): TokenInfo => ({
      jti: t.jti,
      label: t.label,
      scopes: t.scopes,
      quotaMb: t.quotaMb === null ? null : Number(t.quotaMb),
      issuedAt: t.issuedAt,
      expiresAt: t.expiresAt,
      revoked: t.revokedAt !== null,
      revokedAt: t.revokedAt,
      current: t.jti === caller.jti,
    }));
    return jsonResponse(200, { tokens } satisfies TokenList);
  };
}
