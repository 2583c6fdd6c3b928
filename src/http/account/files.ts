/**
 * GET /api/files [list] — the caller's uploads, newest first, paginated by an
 * opaque cursor (the last deal id seen). Because deal ids only grow, uploads
 * arriving while a client pages never shift the pages it has not read yet.
 * Each deal shows its state (active, expired, deleted); `?state=` lists only
 * the deals in one state.
 */
import { toRfc3339 } from "../../kernel/clock.ts";
import type { Clock } from "../../kernel/clock.ts";
import { ApiError } from "../../kernel/errors.ts";
import { requireTokenScope } from "../../auth/scopes.ts";
import type { CatalogRecords } from "../../domain/catalog_records.ts";
import { dealViews } from "./deal_view.ts";
import type { Handoff } from "../../handoff/service.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import { DEAL_STATES } from "../../kernel/wire.ts";
import type { DealState, FilesPage } from "../../kernel/wire.ts";
import { normalizeCid } from "../../kernel/cid_format.ts";

/**
 * Files a page lists unless ?limit= says otherwise, and the most ?limit= may
 * ask for; the API document states both (src/http/docs/account_docs.ts).
 */
export const FILES_PER_PAGE = { byDefault: 100, atMost: 1000 } as const;

export interface FilesDeps {
  records: CatalogRecords;
  baseUrl: string;
  clock: Clock;
  handoff: Handoff | null;
}

export function createFilesHandler(deps: FilesDeps): Handler {
  return async (_request, context) => {
    const caller = requireTokenScope(await context.caller(), "list");
    const limit = parseLimit(context.url.searchParams.get("limit"));
    const beforeId = parseCursor(context.url.searchParams.get("cursor"));
    const state = parseState(context.url.searchParams.get("state"));
    const cid = parseCid(context.url.searchParams.get("cid"));
    // One instant for the filter and every deal's state, so they agree.
    const now = deps.clock.now();
    const filter = state === null ? null : { state, now: toRfc3339(now) };
    // One extra row tells whether another page exists.
    const rows = await deps.records.listDeals(caller.sub, {
      beforeId,
      limit: limit + 1,
      filter,
      cid,
    });
    const page = rows.slice(0, limit);
    const nextCursor = rows.length > limit ? encodeCursor(page[page.length - 1].id) : null;
    const result: FilesPage = {
      files: await dealViews(page, { baseUrl: deps.baseUrl, now, handoff: deps.handoff }),
      nextCursor,
    };
    return jsonResponse(200, result);
  };
}

function parseLimit(raw: string | null): number {
  if (raw === null) return FILES_PER_PAGE.byDefault;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= FILES_PER_PAGE.atMost)) {
    throw new ApiError(
      "invalid_request",
      `limit must be a whole number from 1 to ${FILES_PER_PAGE.atMost}`,
    );
  }
  return n;
}

function parseCid(raw: string | null): string | null {
  if (raw === null) return null;
  const cid = normalizeCid(raw);
  if (cid === null) throw new ApiError("invalid_cid", "cid must be 8 to 80 letters or digits");
  return cid;
}

function parseState(raw: string | null): DealState | null {
  if (raw === null) return null;
  if (!(DEAL_STATES as readonly string[]).includes(raw)) {
    throw new ApiError("invalid_request", `state must be one of ${DEAL_STATES.join(", ")}`);
  }
  return raw as DealState;
}

function encodeCursor(dealId: string): string {
  return new TextEncoder().encode(dealId).toBase64({ alphabet: "base64url", omitPadding: true });
}

function parseCursor(raw: string | null): string | null {
  if (raw === null) return null;
  let decoded = "";
  try {
    decoded = new TextDecoder().decode(Uint8Array.fromBase64(raw, { alphabet: "base64url" }));
  } catch {
    // not base64url (fromBase64 throws a SyntaxError): the error below
  }
  if (!/^[a-z0-9-]{1,64}$/.test(decoded)) {
    throw new ApiError("invalid_request", "cursor is not one this service returned");
  }
  return decoded;
}
