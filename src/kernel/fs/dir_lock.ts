/**
 * One serving process per data directory. Two servers on one directory
 * would sweep each other's in-flight temp files and race their caches, so
 * the server takes an exclusive lock on <data-dir>/serve.lock before it
 * touches anything else there. The lock is an OS file lock (flock), so it
 * goes away with the process however it ends (SIGKILL included); the file
 * keeps the holder's pid only to say who holds it.
 */
import { joinPath } from "./files.ts";

export const LOCK_FILE = "serve.lock";

export class DirectoryLockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DirectoryLockedError";
  }
}

export interface DirectoryLock {
  /** Releases the lock (at shutdown); safe to call twice. */
  release(): void;
}

/** Takes the lock without waiting, or throws DirectoryLockedError naming the holder. */
export async function lockDirectory(directory: string): Promise<DirectoryLock> {
  const path = joinPath(directory, LOCK_FILE);
  const file = await Deno.open(path, { read: true, write: true, create: true, mode: 0o600 });
  let locked = false;
  try {
    locked = await file.tryLock(true);
    if (!locked) {
      const holder = (await Deno.readTextFile(path).catch(() => "")).trim().split("\n")[0];
      throw new DirectoryLockedError(lockedMessage(directory, path, holder));
    }
    await file.truncate(0);
    await file.write(new TextEncoder().encode(`${Deno.pid}\n`));
  } catch (error) {
    file.close();
    throw error;
  }
  return releasing(file);
}

/**
 * The lock of a directory this process may only read (a migration's
 * source): taken on the existing lock file opened read-only (an OS file lock
 * needs no write access), so no server starts on the directory meanwhile.
 * Null when there is no lock file: no server has run there, and one cannot
 * be made without writing. Throws DirectoryLockedError as lockDirectory does.
 */
export async function lockDirectoryReadOnly(directory: string): Promise<DirectoryLock | null> {
  const path = joinPath(directory, LOCK_FILE);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  try {
    if (!await file.tryLock(true)) {
      const holder = (await Deno.readTextFile(path).catch(() => "")).trim().split("\n")[0];
      throw new DirectoryLockedError(lockedMessage(directory, path, holder));
    }
  } catch (error) {
    file.close();
    throw error;
  }
  return releasing(file);
}

function lockedMessage(directory: string, path: string, holder: string): string {
  return `Cannot use data directory ${directory}: it is in use by ` +
    (/^\d+$/.test(holder) ? `process ${holder}` : "another process") + ` (lock file ${path})`;
}

/** The lock held by `file`, dropped when it is closed. */
function releasing(file: Deno.FsFile): DirectoryLock {
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      file.close(); // closing the descriptor drops the flock
    },
  };
}
