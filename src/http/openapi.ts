/**
 * GET /openapi.json — an OpenAPI 3.1 description of the whole public API.
 * tests/openapi_test.ts keeps it honest: every route of the route table is
 * described here and nothing else is.
 */
import { ERROR_STATUS } from "../errors.ts";
import type { ErrorCode } from "../errors.ts";
import { jsonResponse } from "./json.ts";
import type { Handler } from "./router.ts";

type Schema = Record<string, unknown>;

const string = { type: "string" };
const integer = { type: "integer" };
const dateTime = { type: "string", format: "date-time" };

function errors(...codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of byStatus) {
    out[String(status)] = {
      description: list.join(", "),
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  return out;
}

function json(schema: Schema, description = "OK") {
  return { description, content: { "application/json": { schema } } };
}

const bearer = [{ bearer: [] }, { queryToken: [] }];
const optionalBearer = [{}, ...bearer];
const cidParam = {
  name: "cid",
  in: "path",
  required: true,
  schema: { ...string, pattern: "^[a-zA-Z0-9]{8,80}$" },
};
const tokenErrors: ErrorCode[] = ["invalid_token", "revoked_token"];

const dealSchema = {
  type: "object",
  properties: {
    cid: string,
    dealId: string,
    size: integer,
    contentType: string,
    filename: { type: ["string", "null"] },
    createdAt: dateTime,
    term: string,
    termEndsAt: dateTime,
    retrievalUrl: { type: "string", format: "uri" },
  },
};

const pieceHeaders = {
  "Content-Disposition": { schema: string },
  "Cache-Control": { schema: { const: "public, max-age=3600" } },
  ETag: { schema: string },
  "X-Service-Piece-Cid": { schema: string },
  "X-Service-Source": { schema: { enum: ["stage", "r2"] } },
};

export function buildOpenApi(baseUrl: string): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "Content storage staging service",
      version: "0.x (pre-v1)",
      description: "Stage files under a content id and fetch them back at a public URL.",
    },
    servers: [{ url: baseUrl }],
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", bearerFormat: "pk_live_<HS256 JWT>" },
        queryToken: { type: "apiKey", in: "query", name: "token", description: "Deprecated" },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error", "message"],
          properties: { error: { enum: Object.keys(ERROR_STATUS) }, message: string },
        },
        Deal: dealSchema,
      },
    },
    paths: {
      "/api/upload": {
        post: {
          summary: "Stage a file (sponsored without a token)",
          security: optionalBearer,
          parameters: [
            {
              name: "cid",
              in: "query",
              required: true,
              schema: { ...string, pattern: "^[a-zA-Z0-9]{8,80}$" },
            },
            { name: "Content-Length", in: "header", required: true, schema: integer },
            { name: "X-Filename", in: "header", required: false, schema: string },
          ],
          requestBody: {
            required: true,
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          responses: {
            "200": json({
              type: "object",
              properties: {
                cid: string,
                dealId: string,
                size: integer,
                retrievalUrl: { type: "string", format: "uri" },
                term: string,
                sponsored: { type: "boolean" },
                owner: { type: ["string", "null"] },
              },
            }),
            ...errors(
              "invalid_cid",
              "no_body",
              "empty_bodyy",
              "invalid_content_type",
              "invalid_filename",
              "incomplete_body",
              "cid_mismatch",
              ...tokenErrors,
              "insufficient_scope",
              "cid_conflict",
              "length_required",
              "too_large",
              "rate_limited",
              "quota_exceeded",
              "stage_failed",
              "storage_offline",
              "insufficient_storage",
            ),
          },
        },
      },
      "/p/{cid}": {
        get: {
          summary: "Retrieve a piece (public)",
          security: [],
          parameters: [cidParam],
          responses: {
            "200": {
              description: "The stored bytes, with the Content-Type given at upload",
              headers: pieceHeaders,
              content: { "*/*": { schema: { type: "string", format: "binary" } } },
            },
            "304": { description: "Not modified (If-None-Match matched the ETag)" },
            ...errors("invalid_cid", "not_found", "storage_offline"),
          },
        },
        head: {
          summary: "Headers of a piece, no body",
          security: [],
          parameters: [cidParam],
          responses: { "200": { description: "As GET, without a body", headers: pieceHeaders } },
        },
      },
      "/api/auth/signup": {
        post: {
          summary: "Mint a token",
          security: [],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["email", "label"],
                  properties: {
                    email: string,
                    label: { ...string, minLength: 1, maxLength: 64 },
                    scopes: { type: "array", items: { enum: ["put", "get", "list", "pin"] } },
                    quotaMb: { ...integer, minimum: 1, maximum: 1024 },
                  },
                },
              },
            },
          },
          responses: {
            "201": json({
              type: "object",
              properties: {
                token: string,
                userId: string,
                email: string,
                scopes: { type: "array", items: string },
                quotaMb: integer,
                expiresAt: dateTime,
              },
            }, "Created; the token is shown only once"),
            ...errors(
              "invalid_json",
              "invalid_email",
              "invalid_label",
              "invalid_scopes",
              "invalid_quota",
              "too_large",
              "rate_limited",
              "storage_offline",
            ),
          },
        },
      },
      "/api/tokens/revoke": {
        post: {
          summary: "Revoke a token of the caller's user",
          security: bearer,
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: { type: "object", required: ["jti"], properties: { jti: string } },
              },
            },
          },
          responses: {
            "200": json({
              type: "object",
              properties: { jti: string, revoked: { const: true }, revokedAt: dateTime },
            }),
            ...errors(
              "invalid_json",
              "invalid_request",
              ...tokenErrors,
              "insufficient_scope",
              "not_found",
            ),
          },
        },
      },
      "/api/tokens": {
        get: {
          summary: "The caller's tokens (metadata only) [list]",
          security: bearer,
          responses: {
            "200": json({
              type: "object",
              properties: {
                tokens: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: {
                      jti: string,
                      label: string,
                      scopes: { type: "array", items: string },
                      quotaMb: integer,
                      issuedAt: dateTime,
                      expiresAt: dateTime,
                      revoked: { type: "boolean" },
                      revokedAt: { type: ["string", "null"], format: "date-time" },
                      current: { type: "boolean" },
                    },
                  },
                },
              },
            }),
            ...errors(...tokenErrors, "insufficient_scope"),
          },
        },
      },
      "/api/files": {
        get: {
          summary: "The caller's uploads, newest first [list]",
          security: bearer,
          parameters: [
            {
              name: "limit",
              in: "query",
              schema: { ...integer, minimum: 1, maximum: 1000, default: 100 },
            },
            { name: "cursor", in: "query", schema: string },
          ],
          responses: {
            "200": json({
              type: "object",
              properties: {
                files: { type: "array", items: { $ref: "#/components/schemas/Deal" } },
                nextCursor: { type: ["string", "null"] },
              },
            }),
            ...errors("invalid_request", ...tokenErrors, "insufficient_scope"),
          },
        },
      },
      "/api/usage": {
        get: {
          summary: "Per-day usage of the caller [list]",
          security: bearer,
          parameters: [
            { name: "from", in: "query", schema: { ...string, format: "date" } },
            { name: "to", in: "query", schema: { ...string, format: "date" } },
          ],
          responses: {
            "200": json({
              type: "object",
              properties: {
                from: { ...string, format: "date" },
                to: { ...string, format: "date" },
                days: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: {
                      date: { ...string, format: "date" },
                      bytes: integer,
                      uploads: integer,
                    },
                  },
                },
                quotaBytes: integer,
                remainingTodayBytes: integer,
              },
            }),
            ...errors("invalid_request", ...tokenErrors, "insufficient_scope"),
          },
        },
      },
      "/api/deals/{dealId}/extend": {
        post: {
          summary: "Extend a deal by one term of its tier [pin]",
          security: bearer,
          parameters: [{ name: "dealId", in: "path", required: true, schema: string }],
          responses: {
            "200": json({ $ref: "#/components/schemas/Deal" }),
            ...errors(...tokenErrors, "insufficient_scope", "not_found"),
          },
        },
      },
      "/api/limits": {
        get: {
          summary: "The caller's tier, caps and what is left today; ?size= asks about one upload",
          security: optionalBearer,
          parameters: [{ name: "size", in: "query", schema: { ...integer, minimum: 1 } }],
          responses: {
            "200": json({
              type: "object",
              properties: {
                tier: { enum: ["sponsored", "token"] },
                maxFileBytes: integer,
                dailyCapBytes: integer,
                usedTodayBytes: integer,
                remainingTodayBytes: integer,
                resetsAt: dateTime,
                resetSeconds: integer,
                size: integer,
                accepted: { type: "boolean" },
                reason: { type: ["string", "null"] },
              },
            }),
            ...errors("invalid_request", ...tokenErrors),
          },
        },
      },
      "/api/piece-cids": {
        get: {
          summary: "The cid forms the service accepts and verifies, and how to compute them",
          security: [],
          responses: { "200": json({ type: "object" }) },
        },
        post: {
          summary: "Compute the PieceCIDv2 of a body (nothing stored, no quota) [put]",
          security: bearer,
          parameters: [{ name: "Content-Length", in: "header", required: true, schema: integer }],
          requestBody: {
            required: true,
            content: { "*/*": { schema: { type: "string", format: "binary" } } },
          },
          responses: {
            "200": json({ type: "object", properties: { cid: string, size: integer } }),
            ...errors(
              "no_body",
              "empty_bodyy",
              "incomplete_body",
              ...tokenErrors,
              "insufficient_scope",
              "length_required",
              "too_large",
            ),
          },
        },
      },
      "/healthz": {
        get: {
          summary: "Storage and database health",
          security: [],
          responses: {
            "200": json({ type: "object" }),
            "503": json({ type: "object" }, "Degraded"),
          },
        },
      },
      "/openapi.json": {
        get: {
          summary: "This document",
          security: [],
          responses: { "200": json({ type: "object" }) },
        },
      },
      "/docs/deprecations": {
        get: {
          summary: "Deprecated features and what replaces them",
          security: [],
          responses: { "200": json({ type: "object" }) },
        },
      },
    },
  };
}

export function createOpenApiHandler(baseUrl: string): Handler {
  const body = buildOpenApi(baseUrl);
  return () => jsonResponse(200, body, { "cache-control": "public, max-age=300" });
}
