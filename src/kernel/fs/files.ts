/**
 * Small file-system steps shared by the disk driver, the key file and the
 * data directory. Each is one operation with the durability or quietness its
 * callers need, so none of them re-implements fsync-the-directory or
 * "remove if there".
 */
import { createHash } from "node:crypto";

/** Joins path parts with single slashes: joinPath("/a/", "b") is "/a/b". */
export function joinPath(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}

/** The directory a path is in ("." for a bare name). */
export function parentDirectory(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "." : path.slice(0, slash) || "/";
}

/** Makes a directory's entries (a rename, a new file) durable. */
export async function syncDirectory(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

/** Whether a path exists (false only for "not found"; other errors are thrown). */
export function pathExists(path: string | URL): Promise<boolean> {
  return succeededUnless(() => Deno.stat(path), Deno.errors.NotFound);
}

/** Creates one directory level; false when it was already there. */
export function mkdirIfMissing(path: string): Promise<boolean> {
  return succeededUnless(() => Deno.mkdir(path), Deno.errors.AlreadyExists);
}

/**
 * Runs one step: true when it succeeds, false when it fails with the one
 * error its caller counts as an answer (not found, already there), so that
 * error is told apart from every other, which is thrown.
 */
async function succeededUnless(
  step: () => Promise<unknown>,
  answer: abstract new (...args: never[]) => Error,
): Promise<boolean> {
  try {
    await step();
    return true;
  } catch (error) {
    if (error instanceof answer) return false;
    throw error;
  }
}

/** Removes a file; false (never a throw) when it could not be removed or was not there. */
export async function removeQuietly(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
    return true;
  } catch {
    return false;
  }
}

/** The entries of a directory; none when the directory does not exist. */
export async function* readDirQuietly(path: string): AsyncIterable<Deno.DirEntry> {
  try {
    yield* Deno.readDir(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Writes every byte (a single write may be short). */
export async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) offset += await file.write(bytes.subarray(offset));
}

/**
 * Reads a file back in steps of up to 1 MiB and hashes it (lowercase hex
 * SHA-256). Each read runs on Deno's I/O threads, so serving goes on between
 * steps; the buffer is sized to the file, so hashing many small pieces pins
 * no large buffers.
 */
export async function sha256OfFile(path: string, signal?: AbortSignal): Promise<string> {
  const file = await Deno.open(path, { read: true });
  try {
    const hash = createHash("sha256");
    const { size } = await file.stat();
    const buffer = new Uint8Array(Math.max(1, Math.min(size, 1024 * 1024)));
    while (true) {
      signal?.throwIfAborted();
      const read = await file.read(buffer);
      if (read === null) break;
      hash.update(buffer.subarray(0, read));
    }
    return hash.digest("hex");
  } finally {
    file.close();
  }
}
