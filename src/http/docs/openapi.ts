/**
 * GET /openapi.json — the OpenAPI 3.1 document of the whole public API,
 * generated from the route table: nothing here is written per route.
 *
 * Each row's doc (route_doc.ts) becomes one operation, and every GET row also
 * a HEAD operation (the pipeline serves HEAD from GET without a body). The
 * row's error codes plus the pipeline's become one response per status whose
 * Error schema narrows `error` to the codes of that response, so a generated
 * client can switch on them and tests can read them. Bodies are `$ref`s to the
 * shapes of schemas/bodies.ts.
 */
import { ERROR_STATUS } from "../../kernel/errors.ts";
import type { ErrorCode } from "../../kernel/errors.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { BodyDoc, ParameterDoc, RouteDoc, SuccessDoc } from "./route_doc.ts";
import type { Handler, Route } from "../pipeline/router.ts";
import { COMPONENT_SCHEMAS } from "./schemas/bodies.ts";
import { RESPONSE_HEADERS } from "./schemas/headers.ts";
import type { HeaderName, HeaderUse } from "./schemas/headers.ts";
import { binarySchema, schemaRef, stringSchema } from "./schemas/json_schema.ts";
import type { JsonSchema } from "./schemas/json_schema.ts";

/** Errors the pipeline (app.ts) can answer on every route, whatever its handler does. */
export const PIPELINE_ERRORS = [
  "method_not_allowed",
  "internal_error",
  "storage_offline",
] as const satisfies readonly ErrorCode[];

/** Headers an error code is always sent with (401/403 from auth, 405 from the router, …). */
const ERROR_HEADERS_BY_CODE: { readonly [code in ErrorCode]?: HeaderUse } = {
  invalid_token: { "WWW-Authenticate": "always" },
  revoked_token: { "WWW-Authenticate": "always" },
  insufficient_scope: { "WWW-Authenticate": "always" },
  method_not_allowed: { Allow: "always" },
  rate_limited: { "Retry-After": "always" },
  quota_exceeded: { "Retry-After": "always" },
  storage_offline: { "Retry-After": "always" },
  mail_unavailable: { "Retry-After": "always" },
  server_busy: { "Retry-After": "always" },
};

/**
 * The headers of one error response: "always" when every code it lists always
 * sends the header, "sometimes" when only some do (signup_closed shares 403
 * with insufficient_scope but sends no WWW-Authenticate).
 */
function errorHeadersOf(codes: readonly ErrorCode[]): HeaderUse {
  const out: Record<string, "always" | "sometimes"> = {};
  for (const code of codes) {
    for (const name of Object.keys(ERROR_HEADERS_BY_CODE[code] ?? {}) as HeaderName[]) {
      const sentBy = codes.filter((c) => ERROR_HEADERS_BY_CODE[c]?.[name] === "always");
      out[name] = sentBy.length === codes.length ? "always" : "sometimes";
    }
  }
  return out as HeaderUse;
}

/**
 * Sent on any answer to a request that used the deprecated ?token= parameter; documented on
 * the queryToken scheme, and on the successes of the operations that accept a token.
 */
const QUERY_TOKEN_HEADERS: HeaderUse = { Deprecation: "sometimes", Link: "sometimes" };

const STATUS_TEXT: { readonly [status: number]: string } = {
  400: "Bad request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  408: "Request timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length required",
  413: "Content too large",
  429: "Too many requests",
  500: "Internal server error",
  502: "Bad gateway",
  503: "Service unavailable",
  507: "Insufficient storage",
};

type Json = Record<string, unknown>;
type HttpMethod = "get" | "head" | "post" | "put" | "delete" | "patch";

/** The HEAD twin of a GET operation: getPiece → headPiece, listFiles → headListFiles. */
export function headOperationId(getOperationId: string): string {
  const rest = getOperationId.replace(/^get(?=[A-Z])/, "");
  return `head${rest[0].toUpperCase()}${rest.slice(1)}`;
}

/** "/p/:cid" → "/p/{cid}" */
export function openApiPath(routePath: string): string {
  return routePath.replace(/:(\w+)/g, "{$1}");
}

export function buildOpenApi(baseUrl: string, routes: readonly Route[]): Json {
  const paths: Record<string, Partial<Record<HttpMethod, Json>>> = {};
  const operationIds = new Set<string>();
  const add = (path: string, method: HttpMethod, operation: Json) => {
    const id = operation.operationId as string;
    if (operationIds.has(id)) throw new Error(`operationId ${id} is used twice`);
    operationIds.add(id);
    (paths[path] ??= {})[method] = operation;
  };
  for (const route of routes) {
    checkParameters(route);
    const path = openApiPath(route.path);
    add(path, route.method.toLowerCase() as HttpMethod, operationOf(route.doc, { head: false }));
    if (route.method === "GET") add(path, "head", operationOf(route.doc, { head: true }));
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Content storage staging service",
      version: "0.x (pre-v1)",
      description: "Stage files under a content id (cid) and fetch them back at a public URL. " +
        "Every error is JSON {error, message}; match on `error`, each response lists the codes " +
        "it can carry. Every path answers an OPTIONS preflight with 204 and every answer " +
        "carries Access-Control-Allow-Origin: *. Tokens go in Authorization: Bearer; the " +
        "?token= query parameter still works but is deprecated (Deprecation and Link headers).",
    },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      schemas: COMPONENT_SCHEMAS,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "pk_live_<HS256 JWT>",
          description: "A token from POST /api/auth/signup. An operation's security lists the " +
            "scope the token needs.",
        },
        queryToken: {
          type: "apiKey",
          in: "query",
          name: "token",
          description: "Deprecated, removed in v1: the token as ?token=. Ignored when an " +
            "Authorization header is sent. Every answer to a request that uses it carries " +
            'Deprecation (RFC 9745) and a Link with rel="deprecation" to /docs/deprecations.',
        },
      },
    },
  };
}

/** Every :param of the path must be documented, and no row may ask for Content-Length. */
function checkParameters(route: Route): void {
  const documented = (route.doc.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
  const inPath = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  if (documented.sort().join() !== inPath.sort().join()) {
    throw new Error(`${route.method} ${route.path}: path parameters documented: ${documented}`);
  }
  if (route.doc.parameters?.some((p) => p.name.toLowerCase() === "content-length")) {
    throw new Error(`${route.method} ${route.path}: Content-Length is not a parameter`);
  }
}

function operationOf(doc: RouteDoc, { head }: { head: boolean }): Json {
  const operation: Json = {
    operationId: head ? headOperationId(doc.operationId) : doc.operationId,
    summary: head ? `Headers of: ${doc.summary}` : doc.summary,
  };
  const description = [
    head ? "As the GET of this path, without a body." : "",
    doc.description ?? "",
    authText(doc),
  ].filter((s) => s !== "").join(" ");
  if (description) operation.description = description;
  operation.security = securityOf(doc);
  if (doc.parameters?.length) operation.parameters = doc.parameters.map(parameterOf);
  if (doc.requestBody && !head) {
    operation.requestBody = {
      required: true,
      description: doc.requestBody.description,
      content: contentOf(doc.requestBody.body, { request: true }),
    };
  }
  operation.responses = responsesOf(doc, { head });
  return operation;
}

function authText(doc: RouteDoc): string {
  const scope = doc.scope ? ` with the \`${doc.scope}\` scope` : "";
  switch (doc.auth) {
    case "public":
      return "";
    case "optional":
      return `A token is optional; without one the caller is sponsored (per-IP caps), ` +
        `with one it must be valid${scope}.`;
    case "token":
      return `Needs a token${scope}.`;
  }
}

function securityOf(doc: RouteDoc): Json[] {
  if (doc.auth === "public") return [];
  const roles = doc.scope ? [doc.scope] : [];
  const token = [{ bearer: roles }, { queryToken: roles }];
  return doc.auth === "optional" ? [{}, ...token] : token;
}

function parameterOf(parameter: ParameterDoc): Json {
  return {
    name: parameter.name,
    in: parameter.in,
    required: parameter.in === "path" ? true : parameter.required ?? false,
    description: parameter.description,
    schema: parameter.schema,
  };
}

function contentOf(body: BodyDoc, { request }: { request: boolean }): Json {
  if ("json" in body) return { "application/json": { schema: schemaRef(body.json) } };
  if ("text" in body) return { [body.text]: { schema: stringSchema } };
  // Any media type is stored and served as sent; octet-stream is what a client sends by default.
  return request
    ? { "application/octet-stream": { schema: binarySchema }, "*/*": { schema: binarySchema } }
    : { "*/*": { schema: binarySchema } };
}

function headersOf(...uses: (HeaderUse | undefined)[]): Json | undefined {
  const merged: Partial<Record<HeaderName, "always" | "sometimes">> = {};
  for (const use of uses) Object.assign(merged, use);
  const entries = Object.entries(merged) as [HeaderName, "always" | "sometimes"][];
  if (entries.length === 0) return undefined;
  // Inlined, not $ref'd: a reference cannot say whether this answer always sends the header.
  return Object.fromEntries(
    entries.map((
      [name, when],
    ) => [name, { ...RESPONSE_HEADERS[name], required: when === "always" }]),
  );
}

/** The Error schema with `error` narrowed to the codes one response can carry. */
function errorSchema(codes: readonly ErrorCode[]): JsonSchema {
  return {
    allOf: [
      schemaRef("Error"),
      {
        type: "object",
        required: ["error"],
        properties: { error: { type: "string", enum: [...codes] } },
      },
    ],
  };
}

/** The row's errors and the pipeline's, by status, each list in the row's order. */
export function errorCodesByStatus(doc: RouteDoc): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set<ErrorCode>([...doc.errors, ...PIPELINE_ERRORS])) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

function responsesOf(doc: RouteDoc, { head }: { head: boolean }): Json {
  const deprecation = doc.auth === "public" ? undefined : QUERY_TOKEN_HEADERS;
  const responses: Record<string, Json> = {};
  const successes = new Map<number, SuccessDoc>(doc.responses.map((r) => [r.status, r]));
  for (const success of doc.responses) {
    const response: Json = { description: success.description };
    const headers = headersOf(success.headers, deprecation);
    if (headers) response.headers = headers;
    if (success.body && !head) response.content = contentOf(success.body, { request: false });
    responses[String(success.status)] = response;
  }
  for (const [status, codes] of errorCodesByStatus(doc)) {
    const success = successes.get(status);
    const headers = headersOf(
      success?.headers,
      errorHeadersOf(codes),
      doc.errorHeaders?.[status],
    );
    const response: Json = {
      description: `${success ? `${success.description}; or ` : ""}${
        STATUS_TEXT[status] ?? "Error"
      }: ${codes.join(", ")}`,
    };
    if (headers) response.headers = headers;
    if (!head) {
      const error = errorSchema(codes);
      // A status that is also a success (health's 503 degraded) answers either body.
      const schema = success?.body && "json" in success.body
        ? { oneOf: [schemaRef(success.body.json), error] }
        : error;
      response.content = { "application/json": { schema } };
    }
    responses[String(status)] = response;
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

/**
 * The handler of GET /openapi.json. `routes` is the route table itself; the
 * document is built at the first request, when the table (this row included)
 * is complete.
 */
export function createOpenApiHandler(baseUrl: string, routes: readonly Route[]): Handler {
  let document: Json | null = null;
  return () => {
    document ??= buildOpenApi(baseUrl, routes);
    return jsonResponse(200, document, { "cache-control": "public, max-age=300" });
  };
}
