/**
 * Writes a small file so that a crash leaves either the old content or the
 * new, never a torn file: exclusive temp file beside it → write → fsync →
 * rename (replace) or link (create only if absent) → fsync the directory.
 * The disk driver commits pieces the same way, streamed (see
 * driver/disk/staged_file.ts); this is the whole-buffer form.
 */
import { parentDirectory, removeQuietly, syncDirectory, writeAll } from "./files.ts";

export interface AtomicWriteOptions {
  /** Permission bits of the new file, e.g. 0o600 for a secret. */
  mode: number;
  /**
   * "replace" swaps in the new content whatever was there; "create" fails with
   * Deno.errors.AlreadyExists when the file exists (two processes racing to
   * create it both end up reading the winner's).
   */
  ifExists: "replace" | "fail";
}

export async function writeFileAtomic(
  path: string,
  bytes: Uint8Array,
  options: AtomicWriteOptions,
): Promise<void> {
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  const file = await Deno.open(temp, { createNew: true, write: true, mode: options.mode });
  try {
    await writeAll(file, bytes);
    await file.sync();
  } finally {
    file.close();
  }
  try {
    if (options.ifExists === "replace") await Deno.rename(temp, path);
    else await Deno.link(temp, path);
  } finally {
    await removeQuietly(temp);
  }
  await syncDirectory(parentDirectory(path));
}
