/**
 * What the pipeline (app.ts) answers for anything a handler throws: an
 * ApiError as it is (logged when it is a 5xx), a database that is busy or
 * cannot be reached as 503 storage_offline with a Retry-After, and anything
 * else, which is our bug, as 500 internal_error logged with its stack.
 */
import { ApiError } from "../../kernel/errors.ts";
import { databaseUnavailable } from "../../db/unavailable.ts";
import type { Logger } from "../../kernel/log.ts";

export function apiErrorOf(error: unknown, routeName: string, logger: Logger): ApiError {
  if (error instanceof ApiError) {
    if (error.status >= 500) {
      logger.error("request failed", {
        route: routeName,
        code: error.code,
        cause: String(error.cause ?? error.message),
      });
    }
    return error;
  }
  const unavailable = databaseUnavailable(error);
  if (unavailable?.kind === "busy") {
    logger.warn("database busy", { route: routeName });
    return new ApiError("storage_offline", "The database is busy; retry in a moment", {
      headers: { "retry-after": "1" },
    });
  }
  if (unavailable?.kind === "unreachable") {
    logger.warn("database unreachable", { route: routeName, code: unavailable.code });
    return new ApiError("storage_offline", "The database cannot be reached; retry in a moment", {
      headers: { "retry-after": "5" },
    });
  }
  // Anything we did not anticipate is our bug: log it whole, answer 500, never 400.
  logger.error("unhandled error", {
    route: routeName,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  return new ApiError("internal_error", "Internal server error");
}
