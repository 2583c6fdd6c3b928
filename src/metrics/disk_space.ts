/**
 * Free and total space of the file system the data directory is on. Deno 2.9
 * has no Deno.statfs; node:fs's statfs does it, behind the `sys` permission
 * "statfs" (`--allow-sys=statfs`), which the start task does not grant. So
 * the reader exists only where the permission is granted, and the operator
 * who wants the gauge adds that one flag (docs/operations.md, Metrics).
 */
import { statfs } from "node:fs/promises";

export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

/** A reader of dir's file system, or null when this process may not call statfs. */
export function diskSpaceReader(dir: string): (() => Promise<DiskSpace>) | null {
  if (Deno.permissions.querySync({ name: "sys", kind: "statfs" }).state !== "granted") {
    return null;
  }
  return async () => {
    const stats = await statfs(dir);
    // bavail: blocks an unprivileged writer (this service) may still use.
    return { freeBytes: stats.bavail * stats.bsize, totalBytes: stats.blocks * stats.bsize };
  };
}
