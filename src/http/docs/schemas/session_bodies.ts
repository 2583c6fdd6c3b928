/**
 * The JSON Schemas of the web page's cookie session (GET, POST, DELETE
 * /api/auth/session), of signed upload links (POST /api/upload-links) and of
 * the public keys of RS256 tokens (GET /.well-known/jwks.json),
 * part of bodies.ts's COMPONENT_SCHEMAS; their types are in kernel/wire.ts.
 */
import { SCOPES } from "../../../domain/vocabulary.ts";
import {
  arrayOf,
  booleanSchema,
  dateTimeSchema,
  enumOf,
  integerSchema,
  nullable,
  objectOf,
  schemaRef,
  stringSchema,
  uriSchema,
} from "./json_schema.ts";
import type { JsonSchema } from "./json_schema.ts";

export const SESSION_AND_LINK_SCHEMAS = {
  JwkRsa: objectOf({
    kty: { type: "string", const: "RSA" },
    n: { ...stringSchema, description: "Modulus, base64url" },
    e: { ...stringSchema, description: "Public exponent, base64url" },
    kid: { ...stringSchema, description: "The key's RFC 7638 thumbprint, as tokens name it" },
    alg: { type: "string", const: "RS256" },
    use: { type: "string", const: "sig" },
  }),
  Jwks: objectOf({ keys: arrayOf(schemaRef("JwkRsa")) }),
  UploadLinkRequest: objectOf({
    cid: { ...stringSchema, pattern: "^[a-zA-Z0-9]{8,80}$", description: "The upload's cid" },
    size: { ...integerSchema, minimum: 1, description: "The upload's bytes (its Content-Length)" },
    contentType: { ...stringSchema, description: "The upload's Content-Type, exactly" },
    filename: {
      ...nullable(stringSchema),
      description: "Stored with the upload; X-Filename may then only repeat it",
    },
    expiresInSeconds: {
      ...integerSchema,
      minimum: 1,
      maximum: 3600,
      description: "How long the link lives (default and most: an hour, and never past the token)",
    },
  }, { optional: ["filename", "expiresInSeconds"] }),
  UploadLink: objectOf({
    url: {
      ...uriSchema,
      description: "POST the bytes here once, from anywhere, without credentials",
    },
    expiresAt: dateTimeSchema,
  }),
  SessionRequest: objectOf({
    token: { ...stringSchema, minLength: 1, description: "pk_live_<JWT>: the session acts as it" },
  }),
  SessionInfo: objectOf({
    signedIn: booleanSchema,
    via: {
      ...nullable(enumOf(["header", "query", "cookie"])),
      description: "How the request carried its credentials; null: none",
    },
    userId: nullable(stringSchema),
    email: { ...nullable(stringSchema), description: "An e-mail token's address" },
    wallet: { ...nullable(stringSchema), description: "A wallet token's address (EIP-55)" },
    scopes: arrayOf(enumOf(SCOPES)),
    quotaMb: {
      ...nullable(integerSchema),
      description: "An e-mail token's daily quota in MiB; null for a wallet",
    },
    expiresAt: { ...nullable(dateTimeSchema), description: "When the token (and session) ends" },
    jti: { ...nullable(stringSchema), description: "The token's id" },
  }),
} as const satisfies Record<string, JsonSchema>;
