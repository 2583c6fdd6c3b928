/**
 * GET /metrics — the server's counters and gauges in the Prometheus text
 * format, for a Prometheus (or anything that reads the format) to scrape.
 *
 * With --metrics false the route answers 404 not_found, as an unknown path
 * would, and nothing is counted (the server made no metrics). With
 * --metrics-token, a scrape must send `Authorization: Bearer <that token>`:
 * the series name routes and show traffic, which is the operator's business.
 * The token is compared in constant time (as SHA-256 digests, so its length
 * does not show either), and a refusal is 401 invalid_token with the
 * pipeline's WWW-Authenticate, like any other bad token.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError } from "../../kernel/errors.ts";
import { EXPOSITION_CONTENT_TYPE } from "../../metrics/exposition.ts";
import type { ServiceMetrics } from "../../metrics/service_metrics.ts";
import type { Handler } from "../pipeline/router.ts";

export interface MetricsHandlerDeps {
  /** null: the server runs with --metrics false. */
  metrics: Pick<ServiceMetrics, "render"> | null;
  /** The --metrics-token; null: /metrics is public. */
  token: string | null;
}

export function createMetricsHandler(deps: MetricsHandlerDeps): Handler {
  const expected = deps.token === null ? null : digestOf(deps.token);
  return async (request) => {
    if (deps.metrics === null) {
      throw new ApiError("not_found", "This server does not serve metrics (--metrics false)");
    }
    if (expected !== null && !presentsToken(request, expected)) {
      throw new ApiError(
        "invalid_token",
        "GET /metrics needs Authorization: Bearer <the server's --metrics-token>",
      );
    }
    return new Response(await deps.metrics.render(), {
      status: 200,
      headers: { "content-type": EXPOSITION_CONTENT_TYPE, "cache-control": "no-store" },
    });
  };
}

function presentsToken(request: Request, expected: Uint8Array): boolean {
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(request.headers.get("authorization") ?? "");
  return match !== null && timingSafeEqual(digestOf(match[1]), expected);
}

function digestOf(token: string): Uint8Array {
  return createHash("sha256").update(token).digest();
}
