/**
 * The one mapping from the storage driver's failures (and the body pump's,
 * which reads every request body the service streams) to API errors.
 */
import { ApiError } from "../kernel/errors.ts";
import { CidConflictError } from "../catalog/catalog.ts";
import { StoreError } from "../driver/driver.ts";

/** The ApiError for a store or body failure; anything else is returned as it is. */
export function apiErrorOfStoreFailure(error: unknown): unknown {
  if (error instanceof CidConflictError) return new ApiError("cid_conflict", error.message);
  if (!(error instanceof StoreError)) return error;
  switch (error.failure) {
    case "offline":
      return new ApiError("storage_offline", "Storage backend is offline; try again later", {
        cause: error,
      });
    case "full":
      return new ApiError("insufficient_storage", "Storage is full; nothing was stored", {
        cause: error,
      });
    case "rejected":
      return new ApiError("stage_failed", "Storage rejected the upload; nothing was stored", {
        cause: error,
      });
    case "stalled":
    case "too_slow":
      return stalledBody(error, error.message.replace(/^Cannot read upload: /, ""));
    case "short_body":
    case "long_body":
      return new ApiError(
        "incomplete_body",
        "The body did not match Content-Length; nothing was stored",
        { cause: error },
      );
  }
}

/**
 * 408 for a body that stopped arriving, or came slower than the minimum rate;
 * the connection is not kept (its state is unknown).
 */
export function stalledBody(cause?: unknown, why?: string): ApiError {
  const message = why === undefined ? "The body stalled" : `The body was abandoned: ${why}`;
  return new ApiError("request_timeout", `${message}; nothing was stored`, {
    cause,
    headers: { connection: "close" },
  });
}
