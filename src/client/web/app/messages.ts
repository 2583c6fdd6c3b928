/// <reference lib="dom" />
/**
 * Errors in words a person understands. The server's `error` field is a
 * stable code (docs/api.md#error-codes); this table gives every code of that
 * list a sentence, so the page never shows a bare code. A code the table does
 * not know (a newer server) falls back to the server's own message, which is
 * also written for people. tests/web/web_test.ts checks the table against the
 * list in docs/api.md.
 */
import { NetworkError, StorageError, VerificationError } from "../../sdk/mod.ts";
import { formatDuration } from "./format.ts";

export const ERROR_SENTENCES: Readonly<Record<string, string>> = {
  invalid_cid: "The server did not accept the file's content id.",
  no_body: "The file arrived without its size, so the server refused it. Please try again.",
  empty_bodyy: "The file is empty, and the service does not store empty files.",
  invalid_content_type: "The server did not accept the file's type.",
  invalid_filename:
    "The server did not accept the file name (at most 255 bytes, no control characters). " +
    "Rename the file and try again.",
  incomplete_body: "The upload was cut off before the whole file arrived, so nothing was stored. " +
    "Please try again.",
  cid_mismatch:
    "The bytes that arrived do not match the content id computed for them, so nothing was " +
    "stored. Did the file change while it was being uploaded?",
  invalid_manifest:
    "The list of pieces for this large file was not valid, so it was not stored. Please try " +
    "again.",
  manifest_incomplete:
    "Some pieces of this large file were not on the server when its list of pieces arrived. " +
    "Upload the file again: pieces already stored are not sent twice.",
  invalid_car:
    "The file was sent as a CAR, but it is not a valid one (a damaged block, or a hash the " +
    "server does not check), so nothing was stored.",
  invalid_json: "The server could not read the request. Reload the page and try again.",
  invalid_email: "That e-mail address does not look right.",
  invalid_label: "The token's name must be 1 to 64 characters, without control characters.",
  invalid_scopes: "The permissions asked for are not valid.",
  invalid_quota: "The daily quota asked for is out of range.",
  invalid_request: "The server refused the request as malformed. Reload the page and try again.",
  invalid_code: "That code is wrong, has expired or was already used. Sign up again for a new one.",
  invalid_token: "The token is not valid: it may be mistyped, expired, or from another server.",
  revoked_token: "This token has been revoked and no longer works.",
  invalid_signature: "The wallet's signature did not check out. Please sign in again.",
  invalid_link:
    "This upload link no longer works: it was used already, has expired, or is for another file.",
  insufficient_scope: "This token does not have the permission this needs.",
  signup_closed: "This server does not hand out tokens here. Ask its operator for one.",
  csrf_rejected:
    "The server refused a change that did not come from its own page. Reload the page and " +
    "try again.",
  not_found: "Nothing was found: it is not stored here, or it is not yours.",
  method_not_allowed: "The server refused the request. Reload the page and try again.",
  not_acceptable: "The server cannot answer in the format that was asked for.",
  request_timeout:
    "The connection stalled and the server gave up waiting, so nothing was stored. " +
    "Please try again.",
  cid_conflict: "Different bytes are already stored under this content id.",
  offset_mismatch: "The server has a different part of the file than expected. Please try again.",
  upload_incomplete: "That upload has not received all of its bytes yet.",
  unsupported_version: "The server speaks another version of the resumable upload protocol.",
  unsupported_media_type: "The server refused the way the file's bytes were sent.",
  upload_locked: "Another request for this upload is still running. Please try again shortly.",
  gone:
    "This is no longer stored here: its term ended or its owner deleted it. Uploading the same " +
    "file again stores it anew.",
  length_required: "The server needs to know the size up front, and it was not sent.",
  too_large:
    "This is larger than the server accepts in one go: a token raises the limit, and the storage " +
    "command line splits a larger file into pieces.",
  too_many_blocks:
    "This holds more blocks than the server takes in one CAR or sends in one answer: split " +
    "it into smaller CARs, or fetch its parts one by one.",
  range_not_satisfiable: "The part of the file asked for lies past its end.",
  rate_limited:
    "Too many requests from your network address, or today's allowance for it is used up.",
  quota_exceeded: "Your daily upload quota is used up.",
  too_many_uploads:
    "Too many unfinished uploads are open for you already. Let one finish, or cancel one, and " +
    "try again.",
  internal_error: "Something went wrong on the server. Please try again later.",
  stage_failed: "The server could not write the file to its storage. Please try again later.",
  storage_offline: "The server's storage is unavailable right now. Please try again shortly.",
  mail_unavailable: "The server could not send the e-mail with your code. Please try again later.",
  server_busy: "The server is busy with other uploads. Please try again shortly.",
  piece_corrupt:
    "The server's copy of this file failed its integrity check, so it is not served. Upload " +
    "the same file again to repair it, or ask the server's operator to restore it.",
  wallet_unavailable:
    "Wallet sign-in is unavailable: the server cannot reach its blockchain right now.",
  insufficient_storage: "The server's disk is full, so nothing was stored. Please try again later.",
};

/** What EIP-1193 wallets throw when the person says no (code 4001). */
function isUserRejection(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === 4001;
}

/** One or two sentences for a person, whatever was thrown. */
export function describeError(error: unknown): string {
  if (error instanceof StorageError) {
    const sentence = ERROR_SENTENCES[error.code] ?? error.message;
    const wait = error.retryAfterSeconds;
    return wait !== undefined && wait > 0
      ? `${sentence} You can try again in ${formatDuration(wait)}.`
      : sentence;
  }
  if (error instanceof NetworkError) {
    return "The server could not be reached. Check your connection and try again.";
  }
  if (error instanceof VerificationError) {
    return "The data that came back does not match its content id.";
  }
  if (isUserRejection(error)) return "You declined the request in your wallet.";
  if (error instanceof Error) return error.message;
  return String(error);
}
