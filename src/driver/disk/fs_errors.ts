/**
 * Maps file-system errors to the driver's failures (driver.ts), so the HTTP
 * layer answers 503/507/502 without knowing about errno codes.
 */
import { StoreError } from "../driver.ts";

export interface StoreErrorMapping {
  /** A missing path means the store itself is gone (its root or tmp/ was removed). */
  missingMeansOffline?: boolean;
  /** On the write path any other error means the backend refused the piece. */
  unexpected?: "rejected";
}

/** A StoreError for errors the driver understands; others pass through unless `unexpected`. */
export function toStoreError(error: unknown, mapping: StoreErrorMapping = {}): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: string }).code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new StoreError("full", "Cannot store upload: no space left on the device", {
      cause: error,
    });
  }
  if (
    error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotCapable ||
    code === "EROFS" || code === "EACCES" || code === "EPERM" || code === "EIO" ||
    (mapping.missingMeansOffline && error instanceof Deno.errors.NotFound)
  ) {
    return new StoreError("offline", `Cannot use storage: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (mapping.unexpected === "rejected") {
    return new StoreError("rejected", `Storage refused the piece: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return error;
}
