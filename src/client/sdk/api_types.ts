/**
 * The server's JSON bodies as the SDK's account calls return them, under the
 * names the SDK exports. They are written once, in src/kernel/wire.ts, which imports
 * nothing: the SDK still pulls no server module into what a consumer of the
 * package type-checks. Only the request the SDK sends is wider here than the
 * server's type (the server is the one that validates it).
 */
import type { Scope, SignupRequest as WireSignupRequest } from "../../kernel/wire.ts";

export type {
  Deal,
  ErrorBody,
  FilesPage,
  LimitRefusal,
  Limits,
  PieceStatus,
  RevokeResult,
  Scope,
  SessionInfo,
  SignupResult,
  SignupVerificationSent,
  Tier,
  TierInfo,
  TokenInfo,
  TokenList,
  UploadLink,
  UploadLinkRequest,
  Usage,
  UsageDay,
  WalletLimits,
  WalletNonce,
  WalletSignInResult,
} from "../../kernel/wire.ts";

/** What POST /api/upload answers for one piece. */
export type { UploadResult as PieceUploadResponse } from "../../kernel/wire.ts";

export interface SignupRequest extends Omit<WireSignupRequest, "scopes"> {
  /** Some of "put", "get", "list", "pin" (default all); others answer 400 invalid_scopes. */
  scopes?: readonly (Scope | (string & Record<never, never>))[];
}
