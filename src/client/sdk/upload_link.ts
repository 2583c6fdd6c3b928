/**
 * Signed upload links from the SDK's side. A backend that holds a token mints
 * a link (StorageClient.createUploadLink) for exactly the cid, size and type a
 * browser or CI job will send; that side, which holds no credentials, sends
 * the bytes once with uploadThroughLink. A link is POST /api/upload's request
 * with its terms fixed, so one link stores one piece: a file over the tier's
 * per-file cap needs a link per piece (and one for its manifest).
 *
 * @example
 * // In the browser: the cid first (computed locally), then a link from your backend.
 * const { cid } = await pieceCid(file);
 * const { url } = await (await fetch("/my-backend/upload-link", {
 *   method: "POST",
 *   body: JSON.stringify({ cid, size: file.size, contentType: file.type }),
 * })).json();
 * const result = await uploadThroughLink(url, file, { contentType: file.type });
 */
import type { PieceUploadResponse } from "./api_types.ts";
import { readJson, storageErrorOf } from "./transport.ts";
import { NetworkError } from "./errors.ts";

export interface LinkUploadOptions {
  /** The Content-Type the link was minted for, exactly (a Blob's own type by default). */
  contentType?: string;
  /** Sent as X-Filename (the link's own filename wins when it names one). */
  filename?: string;
  signal?: AbortSignal;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

/**
 * Sends `body` to a signed upload link: one POST, no credentials, not retried
 * (a link works once). Answers the upload result; a refusal is StorageError
 * (401 invalid_link when the link is spent, expired, or for other bytes).
 */
export async function uploadThroughLink(
  url: string,
  body: Blob | Uint8Array<ArrayBuffer>,
  options: LinkUploadOptions = {},
): Promise<PieceUploadResponse> {
  const contentType = options.contentType ?? (body instanceof Blob ? body.type : "");
  const headers = new Headers({ "content-type": contentType || "application/octet-stream" });
  if (options.filename !== undefined) {
    headers.set("x-filename", encodeURIComponent(options.filename));
  }
  const send = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  let response: Response;
  try {
    // credentials: "omit": the link alone says whose upload it is; a cookie would add nothing.
    response = await send(url, {
      method: "POST",
      headers,
      body,
      credentials: "omit",
      signal: options.signal,
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new NetworkError(`POST to the upload link failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!response.ok) throw await storageErrorOf(response, "POST");
  return await readJson<PieceUploadResponse>(response);
}
