/**
 * Copies one object of the bucket to another key without the bytes leaving
 * S3: how a staged piece is committed. Up to S3's 5 GiB limit for one
 * CopyObject it is one call; above, a multipart upload whose parts are
 * UploadPartCopy ranges of the source, `concurrency` at a time. A failed
 * multipart copy is aborted, leaving the target key as it was.
 */
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  MAX_PARTS,
  uploadPartCopy,
} from "./multipart_api.ts";
import type { CompletedPart } from "./multipart_api.ts";
import type { S3Client } from "./s3_client.ts";

const GIB = 1024 ** 3;

export interface CopyLimits {
  /** The largest object copied with one CopyObject (S3: 5 GiB). */
  singleCopyMaxBytes: number;
  /** The range each UploadPartCopy copies above that (at least 5 MiB; default 512 MiB). */
  copyPartBytes: number;
  /** UploadPartCopy calls in flight. */
  concurrency: number;
}

export const DEFAULT_COPY_LIMITS: CopyLimits = {
  singleCopyMaxBytes: 5 * GIB,
  copyPartBytes: GIB / 2,
  concurrency: 4,
};

export async function copyObject(
  client: S3Client,
  copy: { from: string; to: string; size: number; limits: CopyLimits },
): Promise<void> {
  if (copy.size <= copy.limits.singleCopyMaxBytes) {
    await client.text({
      method: "PUT",
      key: copy.to,
      headers: { "x-amz-copy-source": client.copySourceOf(copy.from) },
      errorInBody: true,
    });
    return;
  }
  const partBytes = Math.max(copy.limits.copyPartBytes, Math.ceil(copy.size / MAX_PARTS));
  const ranges: { partNumber: number; first: number; last: number }[] = [];
  for (let first = 0; first < copy.size; first += partBytes) {
    const last = Math.min(first + partBytes, copy.size) - 1;
    ranges.push({ partNumber: ranges.length + 1, first, last });
  }
  const target = await createMultipartUpload(client, copy.to);
  const halt = new AbortController();
  try {
    const parts: CompletedPart[] = [];
    let next = 0;
    // `concurrency` workers take the next range until none is left; the first failure stops all.
    const worker = async () => {
      while (next < ranges.length) {
        const range = ranges[next++];
        parts.push(
          await uploadPartCopy(client, target, {
            ...range,
            sourceKey: copy.from,
            signal: halt.signal,
          }),
        );
      }
    };
    const stopAll = (error: unknown): never => {
      halt.abort(error);
      throw error;
    };
    const workerCount = Math.min(copy.limits.concurrency, ranges.length);
    const workers = Array.from({ length: workerCount }, () => worker().catch(stopAll));
    // Settled, not Promise.all: no part copy may still run when the upload is aborted.
    const settled = await Promise.allSettled(workers);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    await completeMultipartUpload(client, target, { parts, expectedBytes: copy.size });
  } catch (error) {
    halt.abort(error);
    await abortMultipartUpload(client, target).catch(() => {});
    throw error;
  }
}
