/**
 * What is left under the staging prefix when an upload did not finish
 * cleanly, and which of it may go. Staging keys name their writer:
 * `staging/<writer>/<uuid>`, the writer being the instance (its row in the
 * instances table with PostgreSQL, a random id per process otherwise), so a
 * leftover can be judged by whose it is, not only by its age:
 *
 *   - this process's own: gone as soon as no upload of this process uses it
 *     (an abort or delete that failed while the bucket was away);
 *   - a writer known dead (not among `writers.live`, and older than
 *     `writers.before`, which covers clock skew and instances that registered
 *     after the live set was read): gone at once;
 *   - anything older than the stale age (24 h), whoever wrote it, and keys
 *     without a writer (from builds before writers were named): gone then.
 *
 * Removing a leftover is always safe for acknowledged data: a piece is
 * acknowledged only after its staging object was copied to its piece key,
 * so the worst a wrong guess does is fail an upload still in progress.
 */
import type { CleanupOptions } from "../driver.ts";
import { abortMultipartUpload } from "./multipart_api.ts";
import { listMultipartUploads, listObjects } from "./object_listing.ts";
import type { S3Client } from "./s3_client.ts";

export interface StagingLeftoversOptions {
  client: S3Client;
  stagingPrefix: string;
  /** This process's writer id, the first segment of its staging keys. */
  writer: string;
  /** Staging keys this process's uploads are using right now. */
  inUse: ReadonlySet<string>;
  /** Leftovers created before this instant (ms since the epoch) go, whoever wrote them. */
  staleBefore: number;
}

/** Aborts the multipart uploads and deletes the staging objects that may go; how many. */
export async function removeStagingLeftovers(
  options: StagingLeftoversOptions,
  cleanup: CleanupOptions = {},
): Promise<number> {
  const { client, stagingPrefix } = options;
  const removable = (key: string, createdAt: number) => mayRemove(options, cleanup, key, createdAt);
  let removed = 0;
  for await (const upload of listMultipartUploads(client, stagingPrefix)) {
    if (!removable(upload.key, upload.initiated)) continue;
    const aborted = await abortMultipartUpload(client, upload).then(() => true, () => false);
    if (aborted) removed++;
  }
  for await (const object of listObjects(client, stagingPrefix)) {
    if (!removable(object.key, object.lastModified)) continue;
    const deleted = await client
      .text({ method: "DELETE", key: object.key, allow: [404] })
      .then(() => true, () => false);
    if (deleted) removed++;
  }
  return removed;
}

/** The staging key of a new upload by `writer`. */
export function stagingKeyOf(stagingPrefix: string, writer: string): string {
  return `${stagingPrefix}${writer}/${crypto.randomUUID()}`;
}

function mayRemove(
  options: StagingLeftoversOptions,
  cleanup: CleanupOptions,
  key: string,
  createdAt: number,
): boolean {
  // NaN (an unreadable timestamp) is never old enough.
  if (createdAt < options.staleBefore) return true;
  const writer = writerOf(key, options.stagingPrefix);
  if (writer === null) return false;
  if (writer === options.writer) return !options.inUse.has(key);
  const writers = cleanup.writers;
  return writers !== undefined && !writers.live.has(writer) && createdAt < writers.before;
}

/** The writer segment of `staging/<writer>/<uuid>`; null for a key without one. */
function writerOf(key: string, stagingPrefix: string): string | null {
  const rest = key.slice(stagingPrefix.length);
  const slash = rest.indexOf("/");
  return slash > 0 ? rest.slice(0, slash) : null;
}
