/**
 * How one piece of an upload reaches the server, decided per piece:
 *
 *   - stored already (GET /api/pieces/{cid}): no bytes are sent. With a token, a deal
 *     the caller already owns on it is used (GET /api/files?cid=, so that
 *     re-running an interrupted upload charges nothing twice); otherwise
 *     POST /api/deals makes the caller a deal on it, charged as an upload of
 *     those bytes would be. Nobody's upload of a stored piece goes dealless.
 *   - larger than RESUMABLE_ABOVE_BYTES: through the tus endpoint
 *     (resumable.ts), bytes counted on the wire, continued after a drop;
 *   - smaller: one POST /api/upload.
 */
import type { Deal, FilesPage, PieceUploadResponse } from "./api_types.ts";
import { StorageError } from "./errors.ts";
import { sendResumably } from "./resumable.ts";
import type { PieceToSend } from "./resumable.ts";
import type { Transport } from "./transport.ts";
import type { ResumeStore, UploadedPiece } from "./types.ts";

/** Pieces above this go through /api/tus; below, one request costs less than two. */
export const RESUMABLE_ABOVE_BYTES = 4 * 1024 * 1024;

export interface PieceToStore extends PieceToSend {
  resumeStore?: ResumeStore;
}

/** Sends a piece (or makes a deal on it without its bytes); the caller's deal on it. */
export async function sendPiece(
  transport: Transport,
  piece: PieceToStore,
): Promise<Omit<UploadedPiece, "cid" | "size">> {
  const size = piece.end - piece.start;
  if (await transport.isStored(piece.cid, piece.signal)) {
    piece.onSent(size);
    const owned = await ownDealOn(transport, piece.cid, piece.signal);
    if (owned !== null) return { dealId: owned.dealId, via: "owned" };
    return { dealId: (await createDeal(transport, piece.cid, piece.signal)).dealId, via: "deal" };
  }
  if (size > RESUMABLE_ABOVE_BYTES) {
    const { dealId } = await sendResumably(transport, {
      ...piece,
      store: piece.resumeStore,
      resumeKey: `${transport.server} ${piece.cid}`,
    });
    return { dealId, via: "sent" };
  }
  const answer = await transport.postPiece({
    cid: piece.cid,
    size,
    body: () => piece.source.body(piece.start, piece.end),
    contentType: piece.contentType,
    filename: piece.filename,
    signal: piece.signal,
  });
  piece.onSent(size);
  // null: a retry found the piece stored by the attempt whose answer was lost.
  if (answer !== null) return { dealId: answer.dealId, via: "sent" };
  return { dealId: (await createDeal(transport, piece.cid, piece.signal)).dealId, via: "deal" };
}

/** POST /api/deals: a deal on bytes already stored. */
export function createDeal(
  transport: Transport,
  cid: string,
  signal?: AbortSignal,
): Promise<PieceUploadResponse> {
  return transport.json<PieceUploadResponse>({
    method: "POST",
    path: "/api/deals",
    body: { cid },
    repeatable: "only-if-not-done",
    signal,
  });
}

/**
 * A deal of the caller's on cid still in its term, if it has one. Without a
 * token (sponsored) or the list scope there is no telling: null.
 */
async function ownDealOn(
  transport: Transport,
  cid: string,
  signal: AbortSignal,
): Promise<Deal | null> {
  if (!transport.hasToken) return null;
  let page: FilesPage;
  try {
    page = await transport.json<FilesPage>({
      method: "GET",
      path: "/api/files",
      query: { cid, limit: 20 },
      repeatable: "safe",
      signal,
    });
  } catch (error) {
    if (error instanceof StorageError && error.status === 403) return null;
    throw error;
  }
  const now = Date.now();
  return page.files.find((deal) =>
    Date.parse(deal.termEndsAt) > now && (deal as { state?: string }).state !== "deleted"
  ) ?? null;
}
