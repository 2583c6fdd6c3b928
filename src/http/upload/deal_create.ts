/**
 * POST /api/deals {"cid"} [put] — a deal on bytes already stored, without
 * sending them: the caller's tier, term and caps, charged and answered exactly
 * as an upload of those bytes would be (the piece's size against the per-file
 * cap and the daily cap, the RateLimit fields, POST /api/upload's result).
 * Clients ask for it instead of skipping a piece someone else stored, so a
 * signed-in user owns a deal (and a row in /api/files) for every file they
 * uploaded. A cid nobody stored is 404: send its bytes.
 *
 * The adapter of the upload pipeline (uploads/pipeline.ts): it reads the
 * JSON body's cid and answers; the intake and the commit are the pipeline's.
 * Its doc is http/docs/upload_docs.ts's createDealDoc.
 */
import { committedAnswer } from "./committed_answer.ts";
import type { Handler } from "../pipeline/router.ts";
import type { UploadDeps } from "./upload.ts";

/** The same as POST /api/upload's: the pipeline, and the base URL of the result. */
export type DealCreateDeps = UploadDeps;

export function createDealCreateHandler(deps: DealCreateDeps): Handler {
  return async (_request, context) => {
    const ticket = await deps.uploads.intake.forStoredPiece({
      caller: () => context.caller(),
      cid: async () => (await context.readJson()).cid,
      logFields: context.logFields,
    });
    const done = await deps.uploads.makeDeal(ticket);
    return committedAnswer(done, ticket.cid.given, deps.baseUrl);
  };
}
