/**
 * The headers of a 200 that carries stored bytes: the same ten on every
 * retrieval route (retrieval_docs.ts documents them), built here once so a
 * route cannot forget one; the routes differ only in the values. Content-Type
 * may be whatever an uploader sent, so nosniff and a sandbox CSP always keep
 * uploaded HTML from running on our origin.
 */

export interface BytesHeadersOptions {
  contentType: string;
  /** The whole representation's length (a 206 replaces it with its range's). */
  size: number;
  contentDisposition: string;
  /** The quoted ETag. */
  etag: string;
  /** The cid of the stored piece behind the answer (X-Service-Piece-Cid). */
  pieceCid: string;
  /** Which store the bytes come from (X-Service-Source). */
  source: string;
  /** Default: public for an hour. */
  cacheControl?: string;
}

export function bytesHeaders(options: BytesHeadersOptions): Headers {
  return new Headers({
    "content-type": options.contentType,
    "content-length": String(options.size),
    "content-disposition": options.contentDisposition,
    "cache-control": options.cacheControl ?? "public, max-age=3600",
    "etag": options.etag,
    "accept-ranges": "bytes",
    "x-service-piece-cid": options.pieceCid,
    "x-service-source": options.source,
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox",
  });
}
