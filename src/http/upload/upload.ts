/**
 * POST /api/upload?cid=… — stages a file: the adapter of the upload pipeline
 * (uploads/pipeline.ts) for a body sent in one request. It reads the HTTP
 * (the cid from the query, Content-Length, Content-Type, X-Filename, the
 * body) and answers the upload result with the caller's RateLimit fields;
 * the checks, the caps and the commit, in the order decisions.md fixes, are
 * the pipeline's. Its doc is http/docs/upload_docs.ts's uploadDoc.
 */
import type { UploadPipeline } from "../../uploads/pipeline.ts";
import { decodeFilename, requireContentType } from "../../uploads/type_and_name.ts";
import { requireContentLength } from "../pipeline/body.ts";
import { committedAnswer } from "./committed_answer.ts";
import type { Handler } from "../pipeline/router.ts";

export interface UploadDeps {
  /** Public base URL without a trailing slash (the result's retrieval URL). */
  baseUrl: string;
  uploads: UploadPipeline;
}

export function createUploadHandler(deps: UploadDeps): Handler {
  return async (request, context) => {
    const ticket = await deps.uploads.intake.forBytes({
      cid: context.url.searchParams.get("cid"),
      cidWhere: "Query parameter cid",
      caller: () => context.caller(),
      describe: () => ({
        length: requireContentLength(request.headers),
        contentType: requireContentType(request.headers.get("content-type")),
        filename: decodeFilename(request.headers.get("x-filename")),
      }),
      resumable: false,
      clientKey: context.clientKey,
      logFields: context.logFields,
    });
    const done = await deps.uploads.storeBody(ticket, request.body, context);
    return committedAnswer(done, ticket.cid.given, deps.baseUrl);
  };
}
