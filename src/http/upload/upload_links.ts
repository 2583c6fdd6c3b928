/**
 * POST /api/upload-links [put] — mints a signed upload link — and POST
 * /api/upload-links/{link} — the one upload it allows, from any origin and
 * without credentials (auth/upload_links.ts has the rules).
 *
 * The link's upload is POST /api/upload's, with its terms fixed: the body's
 * Content-Length and Content-Type must be the link's (and a `cid` query
 * parameter or X-Filename, when sent, too), else 401 invalid_link before a
 * byte is read. The intake then charges the link's owner as for its own
 * upload (a refusal there, such as its quota, leaves the link unspent); the
 * link is spent just before the body is read, so a second use, even a racing
 * one, is 401 invalid_link and stores nothing. Credentials sent with the
 * link's upload are ignored: the link alone says whose upload it is.
 */
import { ApiError } from "../../kernel/errors.ts";
import { toRfc3339 } from "../../kernel/clock.ts";
import type { Config } from "../../config/mod.ts";
import { requireTokenScope } from "../../auth/scopes.ts";
import { invalidLink, MAX_LINK_SECONDS } from "../../auth/upload_links.ts";
import type { LinkTerms, OpenLink, UploadLinks } from "../../auth/upload_links.ts";
import type { UploadPipeline } from "../../uploads/pipeline.ts";
import { checkLengthOfCid, uploadCidOf } from "../../uploads/terms.ts";
import { committedAnswer } from "./committed_answer.ts";
import { checkFilename, decodeFilename, requireContentType } from "../../uploads/type_and_name.ts";
import { normalizeCid } from "../../kernel/cid_format.ts";
import { requireContentLength } from "../pipeline/body.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type { UploadLink } from "../../kernel/wire.ts";

export const UPLOAD_LINKS_PATH = "/api/upload-links";

export interface UploadLinkDeps {
  /** Public base URL without a trailing slash (the link's URL, the result's retrieval URL). */
  baseUrl: string;
  config: Config;
  links: UploadLinks;
  uploads: UploadPipeline;
}

export function createUploadLinkHandler(deps: UploadLinkDeps): Handler {
  return async (_request, context) => {
    const owner = requireTokenScope(await context.caller(), "put");
    const body = await context.readJson();
    const { terms, seconds } = linkRequestOf(body, deps.config);
    const { secret, expiresMs } = await deps.links.mint(owner, terms, seconds);
    const link: UploadLink = {
      url: `${deps.baseUrl}${UPLOAD_LINKS_PATH}/${secret}`,
      expiresAt: toRfc3339(expiresMs),
    };
    return jsonResponse(201, link);
  };
}

export function createLinkUploadHandler(deps: UploadLinkDeps): Handler {
  return async (request, context) => {
    const link = await deps.links.open(context.params.link);
    const filename = requireLinkTerms(link, request, context.url);
    const owner = await link.owner();
    const ticket = await deps.uploads.intake.forBytes({
      cid: link.cid,
      cidWhere: "The link's cid",
      caller: () => Promise.resolve(owner),
      describe: () => ({ length: link.size, contentType: link.contentType, filename }),
      resumable: false,
      clientKey: context.clientKey,
      logFields: context.logFields,
    });
    try {
      await link.spend();
    } catch (error) {
      await ticket.release();
      throw error;
    }
    context.logFields.caller = "link";
    const done = await deps.uploads.storeBody(ticket, request.body, context);
    return committedAnswer(done, link.cid, deps.baseUrl);
  };
}

/** The request must be the link's upload: its length, type, and cid and name when sent. */
function requireLinkTerms(link: OpenLink, request: Request, url: URL): string | null {
  const length = requireContentLength(request.headers);
  const type = request.headers.get("content-type")?.trim() ?? null;
  const cid = url.searchParams.get("cid");
  const filename = decodeFilename(request.headers.get("x-filename"));
  const differs = [
    length !== link.size && `${length} bytes, not ${link.size}`,
    type !== link.contentType && `Content-Type ${type}, not ${link.contentType}`,
    cid !== null && normalizeCid(cid) !== link.cid && `cid ${cid}, not ${link.cid}`,
    filename !== null && link.filename !== null && filename !== link.filename &&
    `X-Filename ${filename}, not ${link.filename}`,
  ].filter((what) => what !== false);
  if (differs.length > 0) {
    throw invalidLink(`This upload link is for another upload: ${differs.join("; ")}`);
  }
  return link.filename ?? filename;
}

/** The body of POST /api/upload-links: {cid, size, contentType, filename?, expiresInSeconds?}. */
function linkRequestOf(
  body: Record<string, unknown>,
  config: Config,
): { terms: LinkTerms; seconds: number } {
  const { size, contentType, filename, expiresInSeconds } = body;
  const cid = uploadCidOf(typeof body.cid === "string" ? body.cid : null, config, "cid");
  if (!Number.isSafeInteger(size) || (size as number) < 1) {
    throw new ApiError("invalid_request", "size (the upload's bytes, a whole number) is required");
  }
  checkLengthOfCid(cid.parsed, size as number);
  if (typeof contentType !== "string") {
    throw new ApiError("invalid_content_type", "contentType (a media type) is required");
  }
  if (filename !== undefined && filename !== null && typeof filename !== "string") {
    throw new ApiError("invalid_filename", "filename must be a string");
  }
  const seconds = expiresInSeconds ?? MAX_LINK_SECONDS;
  if (!Number.isSafeInteger(seconds) || (seconds as number) < 1 || (seconds as number) > 3600) {
    throw new ApiError(
      "invalid_request",
      `expiresInSeconds must be a whole number from 1 to ${MAX_LINK_SECONDS}`,
    );
  }
  return {
    terms: {
      cid: cid.cid,
      size: size as number,
      contentType: requireContentType(contentType).trim(),
      filename: typeof filename === "string" ? checkFilename(filename, "filename") : null,
    },
    seconds: seconds as number,
  };
}
