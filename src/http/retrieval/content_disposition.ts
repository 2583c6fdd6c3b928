/**
 * The Content-Disposition of a retrieval answer. Only retrieval sends a
 * stored name back, so the header is built here, beside the answers that
 * carry it, rather than with the upload checks that accept the name.
 */

/**
 * Content-Disposition for a stored filename (RFC 6266 / RFC 8187): an ASCII
 * fallback in filename= and the exact name in filename*.
 *
 * @example contentDisposition("résumé.pdf")
 * // inline; filename="r_sum_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf
 */
export function contentDisposition(filename: string | null): string {
  if (filename === null) return "inline";
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase(),
  );
  return `inline; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
