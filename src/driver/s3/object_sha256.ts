/**
 * The SHA-256 of an object, read back from S3 as a stream (never buffered
 * whole), for sha256Of and for a staged piece hashed after the fact.
 */
import { createHash } from "node:crypto";
import { StoreError } from "../driver.ts";
import type { S3Client } from "./s3_client.ts";

/** Lowercase hex SHA-256 of key; null when there is no such object. Aborting throws the reason. */
export async function sha256OfObject(
  client: S3Client,
  key: string,
  signal?: AbortSignal,
): Promise<string | null> {
  const response = await client.open({ method: "GET", key, allow: [404], signal });
  if (response.status === 404) {
    await response.body?.cancel();
    return null;
  }
  const hash = createHash("sha256");
  try {
    for await (const chunk of response.body!) hash.update(chunk);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw new StoreError("offline", `S3 stopped sending ${key}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return hash.digest("hex");
}
