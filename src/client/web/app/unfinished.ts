/// <reference lib="dom" />
/**
 * What this browser remembers of uploads a reload or a dropped network cut
 * short, in localStorage (it must outlive the tab, unlike the token, which
 * stays in sessionStorage): the files that were being sent (name, size, last
 * change, when), and the SDK's resume store, the URL of each unfinished piece
 * on the server's resumable endpoint by piece. Picking the same file again
 * hashes it again, finds its pieces' URLs here and sends only what the server
 * lacks. Nothing here is a secret: an upload's URL only works for the one who
 * made it (the same token, or the same address without one). A file is
 * forgotten when its upload is stored or the person chooses to; a piece's URL
 * when the piece is stored (the SDK deletes it) or the server no longer knows
 * it (a day after its last byte).
 */
import type { ResumeStore } from "../../sdk/mod.ts";

const FILES_KEY = "storage.unfinished";
const URL_PREFIX = "storage.resume:";
/** Remembered files older than this are forgotten: the server has let their bytes go. */
const FORGET_AFTER_MS = 2 * 86_400_000;

/** A file whose upload did not finish, as the picker will show it again. */
export interface UnfinishedFile {
  name: string;
  size: number;
  lastModified: number;
  /** When its upload started (ms). */
  startedAt: number;
}

/** The SDK's resume store on this browser's localStorage. */
export const localResumeStore: ResumeStore = {
  get: (key) => localStorage.getItem(URL_PREFIX + key),
  set: (key, url) => localStorage.setItem(URL_PREFIX + key, url),
  delete: (key) => localStorage.removeItem(URL_PREFIX + key),
};

/** The files remembered as unfinished, newest first (stale ones are dropped). */
export function unfinishedFiles(now = Date.now()): UnfinishedFile[] {
  let files: UnfinishedFile[] = [];
  try {
    const parsed = JSON.parse(localStorage.getItem(FILES_KEY) ?? "[]");
    if (Array.isArray(parsed)) files = parsed.filter(isUnfinishedFile);
  } catch {
    // Not ours, or from another version: start afresh.
  }
  const fresh = files.filter((file) => now - file.startedAt < FORGET_AFTER_MS);
  if (fresh.length !== files.length) save(fresh);
  return fresh.sort((a, b) => b.startedAt - a.startedAt);
}

/** Files this tab is sending now ("name size lastModified"): not unfinished while they go. */
const sending = new Set<string>();

/** Marks a file as being sent by this tab (`on`), or no longer. */
export function markSending(file: Pick<File, "name" | "size" | "lastModified">, on: boolean) {
  if (on) sending.add(keyOf(file));
  else sending.delete(keyOf(file));
}

/** The remembered files this tab is not sending now: what "Not finished" offers to continue. */
export function unfinishedNotSending(): UnfinishedFile[] {
  return unfinishedFiles().filter((entry) => !sending.has(keyOf(entry)));
}

function keyOf(file: Pick<File, "name" | "size" | "lastModified">): string {
  return `${file.name} ${file.size} ${file.lastModified}`;
}

/** The remembered entry for a picked file, if it is one (same name, size and last change). */
export function unfinishedEntryOf(file: File): UnfinishedFile | null {
  return unfinishedFiles().find((entry) => sameFile(entry, file)) ?? null;
}

export function rememberUnfinished(file: File): void {
  const others = unfinishedFiles().filter((entry) => !sameFile(entry, file));
  const entry = { name: file.name, size: file.size, lastModified: file.lastModified };
  save([{ ...entry, startedAt: Date.now() }, ...others]);
}

export function forgetUnfinished(file: Pick<File, "name" | "size" | "lastModified">): void {
  save(unfinishedFiles().filter((entry) => !sameFile(entry, file)));
}

function sameFile(entry: UnfinishedFile, file: Pick<File, "name" | "size" | "lastModified">) {
  return entry.name === file.name && entry.size === file.size &&
    entry.lastModified === file.lastModified;
}

function save(files: UnfinishedFile[]): void {
  if (files.length === 0) localStorage.removeItem(FILES_KEY);
  else localStorage.setItem(FILES_KEY, JSON.stringify(files));
}

function isUnfinishedFile(value: unknown): value is UnfinishedFile {
  const entry = value as UnfinishedFile | null;
  return typeof entry?.name === "string" && typeof entry.size === "number" &&
    typeof entry.lastModified === "number" && typeof entry.startedAt === "number";
}
