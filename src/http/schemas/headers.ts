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
    description: "The media type given when the piece was uploaded, sent verbatim",
    schema: stringSchema,
  },
  "Content-Length": {
    description: "The piece's size in bytes",
    schema: { ...integerSchema, minimum: 1 },
  },
  "Content-Disposition": {
    description: "inline, with the uploaded X-Filename as filename and filename* (RFC 6266)",
    schema: { ...stringSchema, examples: [`inline; filename="a.txt"; filename*=UTF-8''a.txt`] },
  },
  "Cache-Control": {
    description: "Pieces never change under their cid",
    schema: { ...stringSchema, const: "public, max-age=3600" },
  },
  ETag: {
    description: "The cid, quoted: send it back in If-None-Match",
    schema: stringSchema,
  },
  "Accept-Ranges": {
    description: "Range requests are not supported",
    schema: { ...stringSchema, const: "none" },
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
} satisfies Record<string, HeaderDoc>;

export type HeaderName = keyof typeof RESPONSE_HEADERS;

/** The headers an answer sends: "always" (documented as required) or "sometimes". */
export type HeaderUse = { readonly [name in HeaderName]?: "always" | "sometimes" };
