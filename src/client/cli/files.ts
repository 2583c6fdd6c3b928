/**
 * The local files a command names, checked before any byte goes out: a
 * missing file, a directory or an unreadable one is a usage error (exit 2)
 * reported at once, rather than after the first of several files has been
 * uploaded. Also the Content-Type guessed from a file name, so an uploaded
 * .html or .png is served back with a useful type.
 */
import { basename, extname } from "node:path";
import { LocalFileError } from "./errors.ts";

export interface InputFile {
  /** As the user wrote it. */
  path: string;
  /** The name without directories: the upload's X-Filename by default. */
  name: string;
  size: number;
}

/** Stats every path; throws LocalFileError (exit 2) for the first that is not a readable file. */
export async function checkInputFiles(paths: readonly string[]): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (const path of paths) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
      if (info.isFile) (await Deno.open(path, { read: true })).close();
    } catch (error) {
      throw new LocalFileError(`cannot read ${path}: ${fileErrorText(error)}`, { cause: error });
    }
    if (!info.isFile) throw new LocalFileError(`cannot read ${path}: not a regular file`);
    files.push({ path, name: basename(path), size: info.size });
  }
  return files;
}

/** "no such file", "permission denied", or the system's text. */
export function fileErrorText(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file or directory";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.AlreadyExists) return "already exists";
  if (error instanceof Deno.errors.IsADirectory) return "is a directory";
  return error instanceof Error ? error.message.split("\n")[0] : String(error);
}

const TYPES: Record<string, string> = {
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".html": "text/html",
  ".htm": "text/html",
  ".css": "text/css",
  ".js": "text/javascript",
  ".json": "application/json",
  ".xml": "application/xml",
  ".pdf": "application/pdf",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
  ".wasm": "application/wasm",
  ".car": "application/vnd.ipld.car",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mov": "video/quicktime",
};

/** The Content-Type for a file name, application/octet-stream when the extension is unknown. */
export function contentTypeOf(name: string): string {
  return TYPES[extname(name).toLowerCase()] ?? "application/octet-stream";
}
