/**
 * /api/tus — resumable uploads, spoken as tus 1.0.0 (tus_protocol.ts) so
 * stock clients (tus-js-client, Uppy) work unchanged:
 *
 *   POST   /api/tus        creation (+ creation-with-upload): checks and reserves as
 *                          POST /api/upload does, before a byte is read → 201 Location
 *   HEAD   /api/tus/{id}   Upload-Offset / Upload-Length / Upload-Expires
 *   PATCH  /api/tus/{id}   appends at Upload-Offset (409 elsewhere); the last byte
 *                          verifies the cid and commits → X-Storage-Cid, X-Storage-Deal-Id
 *   DELETE /api/tus/{id}   termination: the bytes and the reservation go
 *   GET    /api/tus/{id}   a finished upload's result (POST /api/upload's JSON)
 *
 * Only the upload's creator may touch it (the same token subject, or the
 * same client for a sponsored upload); to anyone else it does not exist. The
 * intake, the state machine, the checks, the commit and expiry are the upload
 * pipeline's (uploads/: intake.ts, resumable.ts); this file is its adapter,
 * turning HTTP into its calls and its answers (and failures) into HTTP.
 */
import type { ResumableUploadRecord } from "../../domain/resumable_upload_records.ts";
import { ApiError } from "../../kernel/errors.ts";
import { usageSubjectOf } from "../../limits/tiers.ts";
import { rateLimitHeaders } from "../../limits/rate_limit_headers.ts";
import { ResumableError } from "../../uploads/resumable_outcomes.ts";
import type { AppendOutcome } from "../../uploads/resumable_outcomes.ts";
import type { ResumableUploads } from "../../uploads/resumable.ts";
import type { StoreError } from "../../driver/driver.ts";
import { mayPut } from "../../uploads/intake.ts";
import type { UploadIntake } from "../../uploads/intake.ts";
import { apiErrorOfStoreFailure } from "../../uploads/store_errors.ts";
import { uploadResultOf } from "../../uploads/terms.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import {
  byteCountOf,
  OFFSET_OCTET_STREAM,
  parseUploadMetadata,
  requireTusVersion,
  requireUploadLength,
  tusHeaders,
} from "./tus_protocol.ts";

export { tusDocs } from "../docs/tus_docs.ts";

export const TUS_PATH = "/api/tus";

export interface TusDeps {
  /** Public base URL without a trailing slash (Location, the result's retrieval URL). */
  baseUrl: string;
  /** Lets a creation through, and admits each request's body (uploads/intake.ts). */
  intake: UploadIntake;
  resumable: ResumableUploads;
}

export interface TusHandlers {
  create: Handler;
  /** GET (the finished upload's result) and HEAD (the tus offset). */
  status: Handler;
  append: Handler;
  terminate: Handler;
}

export function createTusHandlers(deps: TusDeps): TusHandlers {
  return {
    create: tusAnswer((request, context) => create(deps, request, context)),
    status: tusAnswer((request, context) => status(deps, request, context)),
    append: tusAnswer(async (request, context) => {
      requireTusVersion(request.headers);
      const type = request.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
      if (type !== OFFSET_OCTET_STREAM) {
        throw new ApiError(
          "unsupported_media_type",
          `A PATCH body must be sent as Content-Type: ${OFFSET_OCTET_STREAM}`,
        );
      }
      const offset = byteCountOf(request.headers, "upload-offset");
      if (offset === null) throw new ApiError("invalid_request", "Upload-Offset is required");
      const subject = await creatorOf(context);
      const outcome = await append(deps, request, context, {
        id: context.params.id,
        offset,
        subject,
      });
      if (outcome.kind === "partial" && outcome.cut) throwIfTooSlow(outcome.cut, outcome.upload);
      return new Response(null, { status: 204, headers: outcomeHeaders(outcome) });
    }),
    terminate: tusAnswer(async (request, context) => {
      requireTusVersion(request.headers);
      const subject = await creatorOf(context);
      await deps.resumable.terminate(context.params.id, subject).catch(rethrowAsApiError);
      return new Response(null, { status: 204, headers: tusHeaders() });
    }),
  };
}

async function create(deps: TusDeps, request: Request, context: RequestContext) {
  requireTusVersion(request.headers);
  const length = requireUploadLength(request.headers);
  const metadata = parseUploadMetadata(request.headers.get("upload-metadata"));
  let firstBytes = 0;
  const ticket = await deps.intake.forBytes({
    cid: metadata.cid,
    cidWhere: "Upload-Metadata cid",
    caller: () => context.caller(),
    describe: () => {
      firstBytes = creationBodyBytes(request, length);
      return { length, contentType: metadata.contentType, filename: metadata.filename };
    },
    resumable: true,
    clientKey: context.clientKey,
    logFields: context.logFields,
  });
  const upload = await deps.resumable.create(ticket, metadata.raw).catch((error) => {
    const refusal = tusApiError(error);
    if (!(refusal instanceof ApiError) || refusal.code !== "too_many_uploads") throw refusal;
    // A 429 says where the daily cap stands, as every 429 of an upload does (its bytes went back).
    const remainingBytes = Math.min(
      ticket.capReserved.capBytes,
      ticket.capReserved.remainingBytes + ticket.size,
    );
    throw new ApiError(refusal.code, refusal.message, {
      headers: {
        ...refusal.headers,
        ...rateLimitHeaders({ ...ticket.capReserved, remainingBytes }),
      },
    });
  });
  const subject = ticket.policy.usageSubject;
  const headers = {
    location: `${deps.baseUrl}${TUS_PATH}/${upload.id}`,
    ...rateLimitHeaders(ticket.capReserved),
  };
  if (firstBytes === 0) {
    await request.body?.cancel().catch(() => {});
    return new Response(null, { status: 201, headers: { ...headers, ...uploadHeaders(upload) } });
  }
  // creation-with-upload: the body is the first bytes, or all of them.
  let outcome: AppendOutcome;
  try {
    outcome = await append(deps, request, context, { id: upload.id, offset: 0, subject });
  } catch (error) {
    // The client never learns this upload's URL: it must not hold a reservation for a day.
    await deps.resumable.terminate(upload.id, subject).catch(() => {});
    throw error;
  }
  if (outcome.kind === "partial" && outcome.cut) {
    await deps.resumable.terminate(upload.id, subject).catch(() => {});
    throw apiErrorOfStoreFailure(outcome.cut);
  }
  if (outcome.kind === "finished") context.logFields.dealId = outcome.deal.id;
  return new Response(null, { status: 201, headers: { ...headers, ...outcomeHeaders(outcome) } });
}

/** HEAD: where the upload stands. GET: the finished upload's result. */
async function status(deps: TusDeps, request: Request, context: RequestContext) {
  const head = request.method === "HEAD";
  if (head) requireTusVersion(request.headers);
  const subject = await creatorOf(context);
  const { id } = context.params;
  const upload =
    await (head ? deps.resumable.current(id, subject) : deps.resumable.peek(id, subject))
      .catch(rethrowAsApiError);
  const headers = uploadHeaders(upload);
  if (head) return new Response(null, { status: 200, headers });
  if (upload.dealId === null) {
    throw new ApiError(
      "upload_incomplete",
      `This upload has ${upload.received} of ${upload.length} bytes: PATCH the rest first`,
      { headers },
    );
  }
  const deal = await deps.resumable.dealOf(upload).catch(rethrowAsApiError);
  return jsonResponse(200, uploadResultOf(deal, upload.cid, deps.baseUrl, upload.roots), headers);
}

/** Appends the request's body to an upload, admitted as any upload body is. */
async function append(
  deps: TusDeps,
  request: Request,
  context: RequestContext,
  target: { id: string; offset: number; subject: string },
): Promise<AppendOutcome> {
  const declared = byteCountOf(request.headers, "content-length");
  const release = deps.intake.admitBody(
    { clientKey: context.clientKey, caller: await context.caller() },
    declared ?? Number.MAX_SAFE_INTEGER,
  );
  try {
    const outcome = await deps.resumable.append(target.id, {
      subject: target.subject,
      offset: target.offset,
      declaredBytes: declared,
      body: request.body ?? ReadableStream.from([]),
      signal: context.signal,
      callerStillValid: () => context.callerStillValid(),
      idleTimeoutMs: context.bodyIdleTimeoutMs,
      minRate: context.bodyMinRate,
    });
    context.logFields.bytesIn = outcome.upload.received - target.offset;
    return outcome;
  } catch (error) {
    throw tusApiError(error);
  } finally {
    release();
  }
}

/** Bytes a creation request carries (creation-with-upload), checked against its length. */
function creationBodyBytes(request: Request, length: number): number {
  const declared = byteCountOf(request.headers, "content-length");
  const chunked = request.headers.has("transfer-encoding");
  if (!chunked && !declared) return 0;
  const type = request.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (type !== OFFSET_OCTET_STREAM) {
    throw new ApiError(
      "unsupported_media_type",
      `Bytes sent with the creation must be Content-Type: ${OFFSET_OCTET_STREAM}`,
    );
  }
  if (declared !== null && declared > length) {
    throw new ApiError("too_large", `The body has ${declared} bytes, more than Upload-Length`);
  }
  return declared ?? length;
}

/** Who may touch an upload: its creator, by the counter it is charged to. */
async function creatorOf(context: RequestContext): Promise<string> {
  return usageSubjectOf(mayPut(await context.caller()));
}

function uploadHeaders(upload: ResumableUploadRecord): Record<string, string> {
  const finished = upload.dealId !== null;
  const headers = tusHeaders({
    offset: upload.received,
    length: upload.length,
    expiresMs: finished ? null : upload.expiresMs,
  });
  if (upload.metadata !== "") headers["upload-metadata"] = upload.metadata;
  if (finished) {
    headers["x-storage-cid"] = upload.cid;
    headers["x-storage-deal-id"] = upload.dealId!;
  }
  return headers;
}

function outcomeHeaders(outcome: AppendOutcome): Record<string, string> {
  const { upload } = outcome;
  const headers = tusHeaders({
    offset: upload.received,
    expiresMs: outcome.kind === "finished" ? null : upload.expiresMs,
  });
  if (outcome.kind === "finished") {
    headers["x-storage-cid"] = upload.cid;
    headers["x-storage-deal-id"] = outcome.deal.id;
  }
  return headers;
}

/**
 * Every tus answer, errors included, carries Tus-Resumable. An error answered
 * before the body was read closes the connection: a client still sending it
 * would otherwise keep the connection (and a server's shutdown) waiting.
 */
function tusAnswer(handler: Handler): Handler {
  return async (request, context) => {
    try {
      const response = await handler(request, context);
      response.headers.set("tus-resumable", "1.0.0");
      return response;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const headers: Record<string, string> = { ...error.headers, "tus-resumable": "1.0.0" };
      if (request.body !== null && !request.bodyUsed) headers.connection = "close";
      throw new ApiError(error.code, error.message, { headers, cause: error.cause });
    }
  };
}

function rethrowAsApiError(error: unknown): never {
  throw tusApiError(error);
}

/**
 * The API error for the resumable domain's failures and the store's. Every
 * invalid_car (and too_many_blocks) ends the upload and closes the
 * connection: a PATCH's body may be left unread where the bad block was.
 */
function tusApiError(error: unknown): unknown {
  if (
    error instanceof ApiError && (error.code === "invalid_car" || error.code === "too_many_blocks")
  ) {
    return new ApiError(error.code, error.message, {
      headers: { ...error.headers, connection: "close" },
      cause: error.cause,
    });
  }
  if (!(error instanceof ResumableError)) return apiErrorOfStoreFailure(error);
  switch (error.failure) {
    case "not_found":
      return new ApiError("not_found", error.message);
    case "offset_mismatch":
      return new ApiError("offset_mismatch", error.message, {
        headers: tusHeaders({ offset: error.offset ?? 0 }),
      });
    case "locked":
      return new ApiError("upload_locked", error.message, { headers: { "retry-after": "1" } });
    case "too_long":
      return new ApiError("too_large", error.message);
    case "over_cap":
      return new ApiError("rate_limited", error.message, { headers: { "retry-after": "60" } });
    case "too_many":
      return new ApiError("too_many_uploads", error.message, { headers: { "retry-after": "60" } });
  }
}

/**
 * A PATCH body that stalled or came slower than --body-min-rate is cut as
 * POST /api/upload's is (408), but what arrived is kept: the answer says how
 * much, so the client can continue from there.
 */
function throwIfTooSlow(cut: StoreError, upload: ResumableUploadRecord): void {
  if (cut.failure !== "too_slow" && cut.failure !== "stalled") return;
  const why = cut.message.replace(/^Cannot read upload: /, "");
  throw new ApiError(
    "request_timeout",
    `The body was abandoned: ${why}; the upload keeps the ${upload.received} bytes that ` +
      "arrived: continue from Upload-Offset",
    { headers: { ...tusHeaders({ offset: upload.received }), connection: "close" } },
  );
}
