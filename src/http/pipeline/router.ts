/**
 * The route table: rows of {method, path, handler, doc}. Unknown paths are
 * 404, known paths with another method are 405 with an Allow header, and HEAD
 * is served by the GET handler (the pipeline drops the body).
 *
 * Paths are matched segment by segment ("/p/:cid" is the literal "p" and one
 * parameter): the table is small and fixed, and this is the whole of what
 * the service needs from a pattern, at a fraction of URLPattern's cost on
 * the retrieval path.
 */
import type { RequestContext } from "./context.ts";
import type { RouteDoc } from "../docs/route_doc.ts";

export type Handler = (request: Request, context: RequestContext) => Response | Promise<Response>;

export type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

export interface Route {
  method: Method;
  /** Path template, e.g. "/p/:cid"; also the route's name in logs. */
  path: string;
  handler: Handler;
  /** What /openapi.json says of the route. */
  doc: RouteDoc;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  | { kind: "method_not_allowed"; allow: string[]; path: string }
  | { kind: "not_found" };

export class Router {
  readonly #routes: readonly Route[];
  readonly #compiled: { route: Route; segments: Segment[] }[];

  constructor(routes: readonly Route[]) {
    this.#routes = routes;
    this.#compiled = routes.map((route) => ({ route, segments: compilePath(route.path) }));
  }

  get routes(): readonly Route[] {
    return this.#routes;
  }

  match(method: string, pathname: string): RouteMatch {
    const lookupMethod = method === "HEAD" ? "GET" : method;
    const parts = pathname.split("/");
    const allow = new Set<string>();
    let matchedPath: string | null = null;
    for (const { route, segments } of this.#compiled) {
      const params = matchSegments(segments, parts);
      if (params === null) continue;
      if (route.method === lookupMethod) return { kind: "found", route, params };
      matchedPath ??= route.path;
      allow.add(route.method);
      if (route.method === "GET") allow.add("HEAD");
    }
    if (matchedPath === null) return { kind: "not_found" };
    allow.add("OPTIONS");
    return { kind: "method_not_allowed", allow: [...allow], path: matchedPath };
  }
}

type Segment = { literal: string } | { param: string };

function compilePath(path: string): Segment[] {
  return path.split("/").map((part) =>
    part.startsWith(":") ? { param: part.slice(1) } : { literal: part }
  );
}

/**
 * The parameters when every segment matches. A parameter matches any non-empty
 * segment and is passed on as sent (percent-encoding included), as URLPattern did.
 */
function matchSegments(segments: Segment[], parts: string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if ("literal" in segment) {
      if (segment.literal !== parts[i]) return null;
    } else {
      if (parts[i] === "") return null;
      params[segment.param] = parts[i];
    }
  }
  return params;
}
