/**
 * Where the disk driver keeps things under its root (<data-dir>/pieces).
 * All of the driver's path mapping lives here.
 *
 *   pieces/
 *   ├── tmp/              uploads in flight: <random>.part, exclusive-created;
 *   │                     emptied at start-up
 *   ├── partial/          resumable uploads: <upload id> (32 hex digits), kept
 *   │                     across restarts until they finish, end or expire
 *   └── 3f/
 *       └── a9/
 *           └── <cid>     a committed piece; 3f/a9 are the first four hex
 *                         digits of SHA-256(cid), so directories stay small
 *                         even though real cids share long prefixes
 */
import { createHash } from "node:crypto";

export const TEMP_DIR = "tmp";
export const TEMP_SUFFIX = ".part";
export const PARTIAL_DIR = "partial";

/** The shard directory of a key, relative to the store root: "3f/a9". */
export function shardOf(key: string): string {
  const digest = createHash("sha256").update(key).digest("hex");
  return `${digest.slice(0, 2)}/${digest.slice(2, 4)}`;
}

/** Keys are canonical cids; anything else must never reach the file system. */
export function assertSafeKey(key: string): void {
  if (!/^[a-z0-9]{1,128}$/.test(key)) throw new Error(`Cannot use piece key: "${key}"`);
}
