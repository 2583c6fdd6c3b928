/**
 * `storage upload --keep`: unfinished pieces survive the run. The URL of each
 * piece's resumable upload on the server is kept in a small JSON file beside
 * the file being uploaded ("<file>.storage-resume"), so a later run of the
 * same upload (after Ctrl-C, a crash, a reboot, on this machine or another
 * that sees the same directory) continues those pieces from where the server
 * stands instead of sending them again. The file goes once every piece is
 * stored. Without --keep nothing is kept: a run that ends early ends its
 * unfinished uploads on the server, and their quota comes back at once.
 *
 * The file holds no secret: an upload's URL works only for its creator (the
 * same token). It is written whole each time (temporary file, then rename),
 * one write after the other, as the uploaders run side by side.
 */
import type { ResumeStore } from "../sdk/mod.ts";

export const RESUME_SUFFIX = ".storage-resume";

/** Where the unfinished pieces of an upload of `path` are kept. */
export function resumeFileOf(path: string): string {
  return path + RESUME_SUFFIX;
}

/** Whether an earlier run kept unfinished pieces of this file. */
export async function hasKeptPieces(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(resumeFileOf(path))).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** The SDK's resume store on the file beside `path`. */
export function fileResumeStore(path: string): ResumeStore {
  const file = resumeFileOf(path);
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(step: () => Promise<T>): Promise<T> => {
    const run = queue.then(step, step);
    queue = run.catch(() => {});
    return run;
  };
  const change = (edit: (urls: Record<string, string>) => void) =>
    inTurn(async () => {
      const urls = await read(file);
      edit(urls);
      if (Object.keys(urls).length === 0) {
        await Deno.remove(file).catch(() => {});
        return;
      }
      const temporary = `${file}.${crypto.randomUUID().slice(0, 8)}.tmp`;
      await Deno.writeTextFile(temporary, JSON.stringify(urls, null, 2) + "\n");
      await Deno.rename(temporary, file);
    });
  return {
    get: (key) => inTurn(async () => (await read(file))[key] ?? null),
    set: (key, url) => change((urls) => urls[key] = url),
    delete: (key) => change((urls) => delete urls[key]),
  };
}

async function read(file: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw error;
  }
  try {
    const parsed = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" ? parsed : {};
  } catch {
    return {}; // damaged: the pieces are sent again, nothing worse
  }
}
