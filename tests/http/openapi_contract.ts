/**
 * Reads the served /openapi.json as a contract and judges observed answers
 * against it: which operation a request reaches (matched as the router
 * matches), whether the status is declared, whether a JSON error's code is
 * among the codes that status's response lists, and whether every header the
 * document says is always sent was sent. Used by tests/http/openapi_declared_codes_test.ts
 * and tests/project/fuzz_test.ts; a violation is a message naming route, status and code.
 */

type Json = Record<string, unknown>;

/** One answer as a test saw it. */
export interface ObservedAnswer {
  method: string;
  pathname: string;
  status: number;
  /** The `error` of a JSON error body; null when there was none (success, HEAD, not JSON). */
  code: string | null;
  headers: Headers;
}

export interface Operation {
  operationId: string;
  method: string;
  /** The document's path template, e.g. /p/{cid}. */
  path: string;
  responses: Record<string, Json>;
}

export type Resolution =
  | { kind: "operation"; operation: Operation }
  | { kind: "other_method"; path: string; operations: Operation[] }
  | { kind: "no_path" };

const METHODS = ["get", "head", "post", "put", "delete", "patch"];

export class ApiContract {
  readonly document: Json;
  readonly operations: Operation[] = [];

  constructor(document: Json) {
    this.document = document;
    for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
      for (const method of METHODS) {
        const operation = item[method] as Json | undefined;
        if (!operation) continue;
        this.operations.push({
          operationId: operation.operationId as string,
          method: method.toUpperCase(),
          path,
          responses: operation.responses as Record<string, Json>,
        });
      }
    }
  }

  static async fetchFrom(baseUrl: string): Promise<ApiContract> {
    const response = await fetch(`${baseUrl}/openapi.json`);
    if (response.status !== 200) throw new Error(`/openapi.json answered ${response.status}`);
    return new ApiContract(await response.json());
  }

  operation(operationId: string): Operation {
    const found = this.operations.find((o) => o.operationId === operationId);
    if (!found) throw new Error(`the document has no operation ${operationId}`);
    return found;
  }

  /** The operation a request reaches: path segments match as in src/http/pipeline/router.ts. */
  resolve(method: string, pathname: string): Resolution {
    const atPath = this.operations.filter((o) => templateMatches(o.path, pathname));
    if (atPath.length === 0) return { kind: "no_path" };
    const operation = atPath.find((o) => o.method === method.toUpperCase());
    if (operation) return { kind: "operation", operation };
    return { kind: "other_method", path: atPath[0].path, operations: atPath };
  }

  /** Statuses the operation declares. */
  statuses(operation: Operation): number[] {
    return Object.keys(operation.responses).map(Number);
  }

  /**
   * The error codes the operation's response for status lists (the `error` enum of its
   * JSON body), or null when that response has no JSON error body (a success, or HEAD).
   */
  codes(operation: Operation, status: number): string[] | null {
    const response = operation.responses[String(status)];
    const content = response?.content as Record<string, { schema?: Json }> | undefined;
    const schema = content?.["application/json"]?.schema;
    return schema ? errorEnumOf(schema) : null;
  }

  /** Whether the operation declares this answer; a HEAD operation's codes are never seen. */
  declares(operation: Operation, status: number, code: string | null): boolean {
    if (!(String(status) in operation.responses)) return false;
    if (code === null || operation.method === "HEAD") return true;
    return this.codes(operation, status)?.includes(code) ?? false;
  }

  /** Headers the document says the operation's answer with this status always sends. */
  requiredHeaders(operation: Operation, status: number): string[] {
    const headers = operation.responses[String(status)]?.headers as
      | Record<string, Json>
      | undefined;
    return Object.entries(headers ?? {}).filter(([, h]) => h.required === true).map(([n]) => n);
  }

  /** Null when the document declares this answer; otherwise why not, naming route, status and code. */
  violation(answer: ObservedAnswer): string | null {
    const seen = `${answer.status}${answer.code ? ` ${answer.code}` : ""}`;
    const request = `${answer.method} ${answer.pathname}`;
    if (answer.method === "OPTIONS") {
      return answer.status === 204 ? null : `${request}: a preflight answered ${seen}, not 204`;
    }
    const resolved = this.resolve(answer.method, answer.pathname);
    if (resolved.kind === "no_path") {
      return answer.status === 404 && (answer.code ?? "not_found") === "not_found"
        ? null
        : `${request}: a path of no operation answered ${seen}, not 404 not_found`;
    }
    if (resolved.kind === "other_method") {
      if (answer.status !== 405) {
        return `${request}: a method ${resolved.path} does not serve answered ${seen}, not 405`;
      }
      for (const operation of resolved.operations) {
        const problem = this.#judge(operation, answer, seen);
        if (problem) return problem;
      }
      return null;
    }
    return this.#judge(resolved.operation, answer, seen);
  }

  #judge(operation: Operation, answer: ObservedAnswer, seen: string): string | null {
    const route = `${operation.operationId} (${operation.method} ${operation.path})`;
    if (!(String(answer.status) in operation.responses)) {
      return `${route} answered ${seen}, but its document declares no ${answer.status} ` +
        `response (declared: ${this.statuses(operation).join(", ")})`;
    }
    if (answer.code !== null && !this.declares(operation, answer.status, answer.code)) {
      const listed = this.codes(operation, answer.status);
      return `${route} answered ${seen}, but its document's ${answer.status} response ` +
        `does not list ${answer.code} (lists: ${listed?.join(", ") || "no error codes"})`;
    }
    const missing = this.requiredHeaders(operation, answer.status).filter((h) =>
      !answer.headers.has(h)
    );
    if (missing.length > 0) {
      return `${route} answered ${seen} without ${missing.join(", ")}, which its document ` +
        `says that answer always sends`;
    }
    return null;
  }
}

/** The error codes an inline schema narrows `error` to (through allOf/oneOf/anyOf; not $ref). */
function errorEnumOf(schema: Json): string[] | null {
  const error = (schema.properties as Record<string, Json> | undefined)?.error;
  if (Array.isArray(error?.enum)) return error.enum as string[];
  for (const keyword of ["allOf", "oneOf", "anyOf"]) {
    for (const part of (schema[keyword] as Json[] | undefined) ?? []) {
      const found = errorEnumOf(part);
      if (found) return found;
    }
  }
  return null;
}

function templateMatches(template: string, pathname: string): boolean {
  const expected = template.split("/");
  const parts = pathname.split("/");
  if (expected.length !== parts.length) return false;
  return expected.every((segment, i) =>
    /^\{\w+\}$/.test(segment) ? parts[i] !== "" : segment === parts[i]
  );
}

/** An answer from fetch, its body read: the JSON error code when it is one. */
export async function observe(method: string, url: string, response: Response): Promise<
  ObservedAnswer & { body: string }
> {
  const body = await response.text();
  return {
    method,
    pathname: new URL(url).pathname,
    status: response.status,
    code: errorCodeOf(body, response.headers),
    headers: response.headers,
    body,
  };
}

/** The `error` of a JSON error body, or null. */
export function errorCodeOf(body: string, headers: Headers): string | null {
  if (headers.get("content-type") !== "application/json" || body === "") return null;
  try {
    const parsed = JSON.parse(body);
    return typeof parsed?.error === "string" ? parsed.error : null;
  } catch {
    return null;
  }
}
