/**
 * What /openapi.json says of the routes about the server itself rather than
 * anyone's content: health, metrics, the web page and its files, the
 * deprecations list and the API document (http/service/, the pipeline's
 * deprecation.ts and openapi.ts serve them). Kept apart from the handlers so
 * a handler's file holds only what it does, and this room's API prose reads
 * in one place.
 */
import type { ParameterDoc, RouteDoc, SuccessDoc } from "./route_doc.ts";
import type { SchemaName } from "./schemas/bodies.ts";
import { stringSchema } from "./schemas/json_schema.ts";

export const getHealthDoc: RouteDoc = {
  operationId: "getHealth",
  summary: "Whether storage and database can be used",
  auth: "public",
  responses: [
    { status: 200, description: "Healthy", body: { json: "Health" } },
    { status: 503, description: "Degraded (see the body)", body: { json: "Health" } },
  ],
  errors: [],
};

export const getMetricsDoc: RouteDoc = {
  operationId: "getMetrics",
  summary: "This server's counters and gauges in the Prometheus text format",
  description: "Text exposition format 0.0.4 (Content-Type: text/plain; version=0.0.4; " +
    "charset=utf-8): requests, latency and bytes by route, uploads by tier and outcome, " +
    "cap refusals, verification failures, and gauges read at scrape time. 404 " +
    "not_found when the server runs with --metrics false. With --metrics-token it needs " +
    "Authorization: Bearer <that token> (not a pk_live_ token); 401 invalid_token " +
    "otherwise.",
  auth: "public",
  responses: [{
    status: 200,
    description: "The metrics",
    body: { text: "text/plain" },
    headers: { "Content-Type": "always", "Cache-Control": "always" },
  }],
  errors: ["invalid_token", "not_found"],
};

/** The web page's files revalidate by ETag. */
const WEB_IF_NONE_MATCH: ParameterDoc = {
  name: "If-None-Match",
  in: "header",
  description: "The ETag of an earlier answer: a match answers 304 without a body",
  schema: stringSchema,
};
const WEB_RESPONSES: SuccessDoc[] = [
  {
    status: 200,
    description: "The file",
    body: { binary: true },
    headers: { "X-Content-Type-Options": "always" },
  },
  {
    status: 304,
    description: "Not modified: If-None-Match named this file's ETag",
    headers: { "X-Content-Type-Options": "always" },
  },
];

export const getWebPageDoc: RouteDoc = {
  operationId: "getWebPage",
  summary: "The web page: upload, files, tokens and usage in a browser",
  description: "HTML under a strict Content-Security-Policy; everything it loads comes " +
    "from /app/ on this server.",
  auth: "public",
  parameters: [WEB_IF_NONE_MATCH],
  responses: WEB_RESPONSES,
  errors: [],
};

export const getWebAssetDoc: RouteDoc = {
  operationId: "getWebAsset",
  summary: "A file of the web page (app.js, app.css, favicon.svg, hash-worker.js)",
  auth: "public",
  parameters: [
    {
      name: "file",
      in: "path",
      description: "app.js, app.css, favicon.svg or hash-worker.js",
      schema: stringSchema,
    },
    WEB_IF_NONE_MATCH,
  ],
  responses: WEB_RESPONSES,
  errors: ["not_found"],
};

export const getFaviconDoc: RouteDoc = {
  operationId: "getFavicon",
  summary: "The site's icon (the page's /app/favicon.svg), where browsers look for it",
  auth: "public",
  parameters: [WEB_IF_NONE_MATCH],
  responses: WEB_RESPONSES,
  errors: [],
};

/**
 * A public document about the API itself (what it offers, what it will drop):
 * one JSON answer, and no errors but the pipeline's.
 */
function aboutTheApi(options: {
  operationId: string;
  summary: string;
  answer: { description: string; schema: SchemaName };
}): RouteDoc {
  const { description, schema } = options.answer;
  return {
    operationId: options.operationId,
    summary: options.summary,
    auth: "public",
    responses: [{ status: 200, description, body: { json: schema } }],
    errors: [],
  };
}

export const listDeprecationsDoc = aboutTheApi({
  operationId: "listDeprecations",
  summary: "Features that will be removed, and what to use instead",
  answer: { description: "The deprecations", schema: "Deprecations" },
});

export const getOpenApiDoc = aboutTheApi({
  operationId: "getOpenApi",
  summary: "This API as an OpenAPI 3.1 document",
  answer: { description: "This document", schema: "OpenApiDocument" },
});
