/**
 * The response headers the API documents, described once. A route's doc names
 * the ones each of its answers sends, and whether always or only sometimes
 * (openapi.ts turns "always" into `required: true`, which a generated client
 * types as present).
 */
import { integerSchema, stringSchema } from "./json_schema.ts";
import type { JsonSchema } from "./json_schema.ts";

export interface HeaderDoc {
  description: string;
  schema: JsonSchema;
}

export const RESPONSE_HEADERS = {
  "Retry-After": {
    description: "Seconds to wait before trying again",
    schema: { ...integerSchema, minimum: 0 },
  },
  RateLimit: {
    description: "What is left of the caller's daily cap in bytes (r) and the seconds until it " +
      "resets (t), as in draft-ietf-httpapi-ratelimit-headers",
    schema: { ...stringSchema, examples: ['"daily";r=104857600;t=3600'] },
  },
  "RateLimit-Policy": {
    description: "The caller's daily cap in bytes (q) over a day (w=86400)",
    schema: { ...stringSchema, examples: ['"daily";q=209715200;w=86400;qu="content-bytes"'] },
  },
  "WWW-Authenticate": {
    description: "Why the token was refused (RFC 6750): invalid_token, or insufficient_scope " +
      "with the scope needed",
    schema: { ...stringSchema, examples: ['Bearer error="invalid_token"'] },
  },
  Allow: {
    description: "The methods this path answers",
    schema: { ...stringSchema, examples: ["POST, OPTIONS"] },
  },
  Deprecation: {
    description: "Sent when the request used the deprecated ?token= query parameter: when that " +
      "form was deprecated (RFC 9745, @ Unix seconds)",
    schema: { ...stringSchema, examples: ["@1767225600"] },
  },
  Link: {
    description: 'Sent with Deprecation: the document that explains the move (rel="deprecation")',
    schema: {
      ...stringSchema,
      examples: [
        '<https://example.org/docs/deprecations>; rel="deprecation"; type="application/json"',
      ],
    },
  },
  "Content-Type": {
    description: "The media type given at upload, sent verbatim (a split file's: its " +
      "manifest's; application/octet-stream on /piece/)",
    schema: stringSchema,
  },
  "Content-Length": {
    description: "The bytes of the body: the whole, or the range a 206 sends",
    schema: { ...integerSchema, minimum: 1 },
  },
  "Content-Disposition": {
    description: "inline, with the uploaded X-Filename (a split file's: its manifest's name) as " +
      "filename and filename* (RFC 6266); on /piece/, attachment named by the cid",
    schema: { ...stringSchema, examples: [`inline; filename="a.txt"; filename*=UTF-8''a.txt`] },
  },
  "Cache-Control": {
    description: "Pieces never change under their cid: an hour on /p/ and /f/ (as the " +
      "interface says), the piece gateway spec's immutable year on /piece/",
    schema: {
      ...stringSchema,
      enum: ["public, max-age=3600", "public, max-age=29030400, immutable"],
    },
  },
  ETag: {
    description: 'The cid, quoted ("<cid>.file" for a split file on /f/): send it back in ' +
      "If-None-Match or If-Range",
    schema: stringSchema,
  },
  "Accept-Ranges": {
    description: "One byte range per request is served (RFC 9110 §14)",
    schema: { ...stringSchema, const: "bytes" },
  },
  "Content-Range": {
    description: "206: the range sent and the whole size (bytes a-b/size); 416: bytes */size",
    schema: { ...stringSchema, examples: ["bytes 0-1048575/104857600", "bytes */104857600"] },
  },
  "X-Service-Piece-Cid": {
    description: "The piece's cid in canonical (lowercase) form",
    schema: stringSchema,
  },
  "X-Service-Source": {
    description: "Where the bytes were read from: stage (local disk) or r2",
    schema: { ...stringSchema, enum: ["stage", "r2"] },
  },
  "X-Content-Type-Options": {
    description: "Browsers must not sniff another type",
    schema: { ...stringSchema, const: "nosniff" },
  },
  "Content-Security-Policy": {
    description: "Uploaded HTML never runs on the service's origin",
    schema: { ...stringSchema, const: "sandbox" },
  },
  "X-Ipfs-Roots": {
    description: "The cid the answer is rooted at (the trustless gateway specification's header)",
    schema: stringSchema,
  },
  "X-Ipfs-Path": {
    description: "The content path answered: /ipfs/<cid>",
    schema: stringSchema,
  },
  "Content-Location": {
    description: "The URL of this answer with its format named (?format=raw or ?format=car), " +
      "sent when Accept picked the format",
    schema: stringSchema,
  },
  Vary: {
    description: "Accept picks the answer's format",
    schema: { ...stringSchema, const: "Accept" },
  },
  "Set-Cookie": {
    description: "The page's session cookie: __Host-storage_session, HttpOnly, Secure, " +
      "SameSite=Strict, Path=/ (removed with Max-Age=0 when the session ends)",
    schema: stringSchema,
  },
  Location: {
    description: "The new upload's URL, to PATCH, HEAD, GET and DELETE",
    schema: { ...stringSchema, format: "uri" },
  },
  "Tus-Resumable": {
    description: "The tus protocol version this answer speaks",
    schema: { ...stringSchema, const: "1.0.0" },
  },
  "Tus-Version": {
    description: "The tus protocol versions this server speaks",
    schema: { ...stringSchema, const: "1.0.0" },
  },
  "Upload-Offset": {
    description: "Bytes of the upload the server has stored",
    schema: { ...integerSchema, minimum: 0 },
  },
  "Upload-Length": {
    description: "Bytes the upload will have (its Upload-Length at creation)",
    schema: { ...integerSchema, minimum: 1 },
  },
  "Upload-Metadata": {
    description: "The Upload-Metadata the upload was created with",
    schema: stringSchema,
  },
  "Upload-Expires": {
    description: "When an unfinished upload goes (24 hours after its last byte), RFC 9110 date",
    schema: stringSchema,
  },
  "X-Storage-Cid": {
    description: "On the answer that finished the upload: the cid its deal is for",
    schema: stringSchema,
  },
  "X-Storage-Deal-Id": {
    description: "On the answer that finished the upload: the deal its last byte made",
    schema: stringSchema,
  },
} satisfies Record<string, HeaderDoc>;

export type HeaderName = keyof typeof RESPONSE_HEADERS;

/** The headers an answer sends: "always" (documented as required) or "sometimes". */
export type HeaderUse = { readonly [name in HeaderName]?: "always" | "sometimes" };
