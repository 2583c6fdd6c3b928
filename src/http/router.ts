/**
 * A route table: rows of {method, pattern, handler}. Unknown paths are 404,
 * known paths with another method are 405 with an Allow header, and HEAD is
 * served by the GET handler (the handler sees the method and sends no body).
 */
import type { RequestContext } from "./context.ts";

export type Handler = (request: Request, context: RequestContext) => Response | Promise<Response>;

export type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

export interface Route {
  method: Method;
  /** Path template, e.g. "/p/:cid"; also the route's name in logs. */
  path: string;
  handler: Handler;
}

interface CompiledRoute extends Route {
  pattern: URLPattern;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  | { kind: "method_not_allowed"; allow: string[]; path: string }
  | { kind: "not_found" };

export class Router {
  readonly #routes: CompiledRoute[];

  constructor(routes: readonly Route[]) {
    this.#routes = routes.map((r) => ({ ...r, pattern: new URLPattern({ pathname: r.path }) }));
  }

  get routes(): readonly Route[] {
    return this.#routes;
  }

  match(method: string, pathname: string): RouteMatch {
    const lookupMethod = method === "HEAD" ? "GET" : method;
    const allow = new Set<string>();
    let matchedPath: string | null = null;
    for (const route of this.#routes) {
      const result = route.pattern.exec({ pathname });
      if (!result) continue;
      const params = result.pathname.groups as Record<string, string>;
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
