/**
 * The SDK writes out the server's JSON shapes itself (src/client/api_types.ts)
 * so it imports no server module; this file fails to type-check the moment a
 * shape drifts from the server's own type in src/http/schemas/bodies.ts
 * (which tests/openapi_test.ts in turn ties to the published schema).
 * Answers must match both ways; requests the SDK sends may be wider (the
 * server is the one that validates them).
 */
import { assertEquals } from "./helpers/assert.ts";
import type * as Server from "../src/http/schemas/bodies.ts";
import type * as Sdk from "../src/client/api_types.ts";
import type { SignupResult as ServerSignupResult } from "../src/auth/signup_result.ts";

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Accepts<Wide, Narrow> = [Narrow] extends [Wide] ? true : false;

const contract: Record<string, true> = {
  pieceUpload: true satisfies Same<Sdk.PieceUploadResponse, Server.UploadResult>,
  signupResult: true satisfies Same<Sdk.SignupResult, ServerSignupResult>,
  verificationSent: true satisfies Same<Sdk.SignupVerificationSent, Server.SignupVerificationSent>,
  walletNonce: true satisfies Same<Sdk.WalletNonce, Server.WalletNonce>,
  walletSignIn: true satisfies Same<Sdk.WalletSignInResult, Server.WalletSignInResult>,
  revoke: true satisfies Same<Sdk.RevokeResult, Server.RevokeResult>,
  tokenInfo: true satisfies Same<Sdk.TokenInfo, Server.TokenInfo>,
  tokenList: true satisfies Same<Sdk.TokenList, Server.TokenList>,
  deal: true satisfies Same<Sdk.Deal, Server.Deal>,
  filesPage: true satisfies Same<Sdk.FilesPage, Server.FilesPage>,
  usage: true satisfies Same<Sdk.Usage, Server.Usage>,
  limits: true satisfies Same<Sdk.Limits, Server.Limits>,
  signupRequest: true satisfies Accepts<Sdk.SignupRequest, Server.SignupRequest>,
  errorBody: true satisfies Accepts<Sdk.ErrorBody, Server.ErrorBody>,
};

Deno.test("types: the SDK's copies of the server's JSON shapes match bodies.ts", () => {
  assertEquals(Object.values(contract).every((ok) => ok), true);
});
