/**
 * The disk driver ("stage" source): content-addressed files under one root.
 *
 * Write path: exclusive-create a temp file in <root>/tmp, stream the body
 * into it (hashing on the way when asked), fsync, and only on commit rename
 * it to its sharded path and fsync the directory. A crash at any point leaves
 * either nothing visible or a complete, durable piece; temp files are swept
 * at start-up.
 */
import { createHash } from "node:crypto";
import { assertSafeKey, joinPath, shardOf, TEMP_DIR, TEMP_SUFFIX } from "./paths.ts";
import { createChunkReader } from "./chunk_reader.ts";
import { StoreError } from "./driver.ts";
import type { OpenedPiece, PieceStore, StagedPiece, StageOptions, StoreHealth } from "./driver.ts";

export interface DiskStoreOptions {
  /** Directory the pieces live under; `DiskStore.create` makes it (with tmp/) if missing. */
  root: string;
}

export class DiskStore implements PieceStore {
  readonly source = "stage";
  readonly #root: string;
  readonly #tempDir: string;
  /** Shard directories known to exist, so the hot path skips mkdir and its fsync. */
  readonly #knownShards = new Set<string>();

  /** Creates the root (and tmp/) if missing and returns a store on it. */
  static async create(options: DiskStoreOptions): Promise<DiskStore> {
    const store = new DiskStore(options);
    await Deno.mkdir(store.#tempDir, { recursive: true });
    return store;
  }

  constructor(options: DiskStoreOptions) {
    this.#root = options.root.replace(/\/+$/, "") || "/";
    this.#tempDir = joinPath(this.#root, TEMP_DIR);
  }

  async check(): Promise<StoreHealth> {
    try {
      const info = await Deno.stat(this.#root);
      if (!info.isDirectory) return { ok: false, detail: `${this.#root} is not a directory` };
      await Deno.mkdir(this.#tempDir, { recursive: true });
      const probe = joinPath(this.#tempDir, `health-${crypto.randomUUID()}${TEMP_SUFFIX}`);
      await Deno.writeFile(probe, new Uint8Array(0), { createNew: true });
      await Deno.remove(probe);
      return { ok: true, detail: `writable at ${this.#root}` };
    } catch (error) {
      return { ok: false, detail: `Cannot use ${this.#root}: ${(error as Error).message}` };
    }
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const info = await Deno.stat(this.#pathOf(key));
      return { size: info.size };
    } catch (error) {
      return await this.#missingOrOffline(error);
    }
  }

  async open(key: string): Promise<OpenedPiece | null> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#pathOf(key), { read: true });
    } catch (error) {
      return await this.#missingOrOffline(error);
    }
    try {
      const info = await file.stat();
      // file.readable closes the file when the stream ends or is cancelled.
      return { size: info.size, body: file.readable };
    } catch (error) {
      file.close();
      throw toStoreError(error);
    }
  }

  async sha256Of(key: string, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    try {
      return await sha256OfFile(this.#pathOf(key), options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      return await this.#missingOrOffline(error);
    }
  }

  async stage(body: ReadableStream<Uint8Array>, options: StageOptions): Promise<StagedPiece> {
    const tempPath = joinPath(this.#tempDir, `${crypto.randomUUID()}${TEMP_SUFFIX}`);
    const file = await this.#createTempFile(tempPath);
    const hash = options.computeSha256 === false ? null : createHash("sha256");
    let size = 0;
    try {
      // Two buffers: chunk N is written (on Deno's I/O threads) while chunk N+1 is read.
      const reader = createChunkReader(body, {
        expectedBytes: options.expectedBytes,
        buffers: 2,
      });
      const onAbort = () => reader.cancel(options.signal?.reason).catch(() => {});
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const watchdog = options.idleTimeoutMs === undefined
        ? null
        // Cancelling the reader ends its pending read, so the loop below sees the stall.
        : new ReadWatchdog(options.idleTimeoutMs, () => {
          reader.cancel(new Error("stalled")).catch(() => {});
        });
      let writing: Promise<void> | null = null;
      try {
        if (options.signal?.aborted) {
          throw new StoreError("short_body", "Cannot store upload: it was aborted");
        }
        while (true) {
          let chunk: Uint8Array | null;
          watchdog?.reading(true);
          try {
            chunk = await reader.next();
          } catch (error) {
            if (watchdog?.fired) throw stalledError(options.idleTimeoutMs!);
            throw new StoreError("short_body", "Cannot read upload: the body ended early", {
              cause: error,
            });
          }
          watchdog?.reading(false);
          if (watchdog?.fired) throw stalledError(options.idleTimeoutMs!);
          if (chunk === null) break;
          size += chunk.byteLength;
          if (size > options.expectedBytes) {
            throw new StoreError("long_body", "Cannot store upload: more bytes than declared");
          }
          // Writes stay in order: each starts once the previous one is done. Then the
          // same bytes are hashed and inspected while this write is in flight.
          if (writing) await writing;
          writing = writeAll(file, chunk);
          // Observed now so a failure while we read on is never "unhandled"; awaited below.
          writing.catch(() => {});
          hash?.update(chunk);
          const inspected = options.onChunk?.(chunk);
          if (inspected) await inspected;
        }
        if (writing) await writing;
      } finally {
        // Never close the file under a write in flight (a failure of it was thrown already).
        await writing?.catch(() => {});
        watchdog?.stop();
        options.signal?.removeEventListener("abort", onAbort);
        reader.release();
      }
      if (size !== options.expectedBytes) {
        throw new StoreError(
          "short_body",
          `Cannot store upload: got ${size} of ${options.expectedBytes} bytes`,
        );
      }
      await file.sync();
    } catch (error) {
      file.close();
      await removeQuietly(tempPath);
      throw toStoreError(error, { unexpected: "rejected" });
    }
    file.close();
    return this.#stagedPiece(tempPath, size, hash?.digest("hex") ?? null);
  }

  async delete(key: string): Promise<boolean> {
    try {
      await Deno.remove(this.#pathOf(key));
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return false;
      throw toStoreError(error);
    }
  }

  async *list(): AsyncIterable<string> {
    for await (const level1 of readDirQuietly(this.#root)) {
      if (!level1.isDirectory || level1.name === TEMP_DIR) continue;
      const dir1 = joinPath(this.#root, level1.name);
      for await (const level2 of readDirQuietly(dir1)) {
        if (!level2.isDirectory) continue;
        for await (const entry of readDirQuietly(joinPath(dir1, level2.name))) {
          if (entry.isFile) yield entry.name;
        }
      }
    }
  }

  async cleanup(): Promise<{ removedTemporaryFiles: number }> {
    let removed = 0;
    for await (const entry of readDirQuietly(this.#tempDir)) {
      if (!entry.name.endsWith(TEMP_SUFFIX)) continue;
      if (await removeQuietly(joinPath(this.#tempDir, entry.name))) removed++;
    }
    return { removedTemporaryFiles: removed };
  }

  #pathOf(key: string): string {
    assertSafeKey(key);
    return joinPath(this.#root, shardOf(key), key);
  }

  async #createTempFile(tempPath: string): Promise<Deno.FsFile> {
    const create = () => Deno.open(tempPath, { createNew: true, write: true, mode: 0o644 });
    try {
      return await create();
    } catch (error) {
      // tmp/ may be gone while the root is still there (an operator cleaned up): recreate it.
      if (!(error instanceof Deno.errors.NotFound)) {
        throw toStoreError(error, { unexpected: "rejected" });
      }
    }
    try {
      await Deno.stat(this.#root);
      await Deno.mkdir(this.#tempDir, { recursive: true });
      return await create();
    } catch (error) {
      throw toStoreError(error, { missingMeansOffline: true });
    }
  }

  #stagedPiece(tempPath: string, size: number, sha256: string | null): StagedPiece {
    let settled = false;
    return {
      size,
      sha256,
      computeSha256: async () => {
        if (sha256 !== null) return sha256;
        if (settled) throw new Error("Cannot hash a staged piece after commit or discard");
        try {
          return await sha256OfFile(tempPath);
        } catch (error) {
          throw toStoreError(error, { missingMeansOffline: true });
        }
      },
      commit: async (key: string) => {
        if (settled) throw new Error("Cannot commit a staged piece twice");
        const shard = shardOf(key);
        const shardDir = joinPath(this.#root, shard);
        try {
          await this.#ensureShard(shard);
          await Deno.rename(tempPath, joinPath(shardDir, key));
          await syncDirectory(shardDir);
          settled = true;
        } catch (error) {
          await removeQuietly(tempPath);
          settled = true;
          throw toStoreError(error, { missingMeansOffline: true, unexpected: "rejected" });
        }
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await removeQuietly(tempPath);
      },
    };
  }

  async #ensureShard(shard: string): Promise<void> {
    if (this.#knownShards.has(shard)) return;
    const [outer] = shard.split("/");
    const outerDir = joinPath(this.#root, outer);
    const created = await mkdirIfMissing(outerDir);
    if (await mkdirIfMissing(joinPath(this.#root, shard))) await syncDirectory(outerDir);
    // A new directory entry is durable only once its parent is synced too.
    if (created) await syncDirectory(this.#root);
    this.#knownShards.add(shard);
  }

  async #missingOrOffline(error: unknown): Promise<null> {
    if (!(error instanceof Deno.errors.NotFound)) throw toStoreError(error);
    // A missing piece is a 404 only while the store itself is there.
    try {
      await Deno.stat(this.#root);
    } catch (rootError) {
      throw toStoreError(rootError, { missingMeansOffline: true });
    }
    return null;
  }
}

interface MapOptions {
  missingMeansOffline?: boolean;
  /** On the write path any other error means the backend refused the piece. */
  unexpected?: "rejected";
}

/** Maps file-system errors to the driver's failures; others pass through unless `unexpected`. */
function toStoreError(error: unknown, options: MapOptions = {}): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: string }).code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new StoreError("full", "Cannot store upload: no space left on the device", {
      cause: error,
    });
  }
  if (
    error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotCapable ||
    code === "EROFS" || code === "EACCES" || code === "EPERM" || code === "EIO" ||
    (options.missingMeansOffline && error instanceof Deno.errors.NotFound)
  ) {
    return new StoreError("offline", `Cannot use storage: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (options.unexpected === "rejected") {
    return new StoreError("rejected", `Storage refused the piece: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return error;
}

/**
 * Notices a body that stops sending: fires once if a read has been waiting for
 * idleMs. One timer per upload, re-armed lazily, instead of a timer and a race
 * per chunk (an upload has thousands of chunks).
 */
class ReadWatchdog {
  fired = false;
  #readingSince: number | null = null;
  #timer: ReturnType<typeof setTimeout>;

  constructor(idleMs: number, onIdle: () => void) {
    const check = () => {
      const waited = this.#readingSince === null ? 0 : performance.now() - this.#readingSince;
      if (waited >= idleMs) {
        this.fired = true;
        onIdle();
      } else {
        this.#timer = setTimeout(check, idleMs - waited);
      }
    };
    this.#timer = setTimeout(check, idleMs);
  }

  /** Marks the start (true) or end (false) of a read. */
  reading(active: boolean): void {
    this.#readingSince = active ? performance.now() : null;
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}

function stalledError(idleMs: number): StoreError {
  return new StoreError("stalled", `Cannot read upload: no bytes for ${idleMs} ms`);
}

/**
 * Reads a file back in 1 MiB steps and hashes it. Each read runs on Deno's I/O
 * threads, so serving goes on between steps.
 */
async function sha256OfFile(path: string, signal?: AbortSignal): Promise<string> {
  const file = await Deno.open(path, { read: true });
  try {
    const hash = createHash("sha256");
    // Sized to the file (up to 1 MiB), so hashing many small pieces pins no large buffers.
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

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) offset += await file.write(bytes.subarray(offset));
}

async function syncDirectory(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

async function mkdirIfMissing(path: string): Promise<boolean> {
  try {
    await Deno.mkdir(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return false;
    throw error;
  }
}

async function removeQuietly(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
    return true;
  } catch {
    return false;
  }
}

async function* readDirQuietly(path: string): AsyncIterable<Deno.DirEntry> {
  try {
    yield* Deno.readDir(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
