/**
 * The disk driver ("stage" source): content-addressed files under one root.
 *
 * Write path: exclusive-create a temp file in <root>/tmp, stream the body
 * into it (hashing on the way when asked), fsync, and only on commit rename
 * it to its sharded path and fsync the directory. A crash at any point leaves
 * either nothing visible or a complete, durable piece; cleanup() sweeps the
 * temp files no upload of this process is using (one process per data
 * directory: the directory lock), at start-up and while serving.
 *
 * Sharing with the group (`shareWithGroup`, for nginx's workers behind
 * --x-accel-redirect): committed pieces 0640 and the directories above them
 * 0710 (enter, not list), tmp/ 0700, so the group reads pieces by their
 * exact paths and nothing else; modes are set explicitly, whatever the
 * umask, and pieces committed before are brought in line at create().
 */
import {
  joinPath,
  mkdirIfMissing,
  readDirQuietly,
  removeQuietly,
  sha256OfFile,
  syncDirectory,
  writeAll,
} from "../../kernel/fs/files.ts";
import { pumpBody } from "../body_pump.ts";
import { bytesInRange } from "../driver.ts";
import type {
  ByteRange,
  OpenedPiece,
  OpenOptions,
  PartialStore,
  PieceStat,
  PieceStore,
  StagedPiece,
  StageOptions,
  StoreHealth,
} from "../driver.ts";
import { fileRangeStream } from "./file_range.ts";
import { ReadGarbage } from "./read_garbage.ts";
import { toStoreError } from "./fs_errors.ts";
import { assertSafeKey, PARTIAL_DIR, shardOf, TEMP_DIR, TEMP_SUFFIX } from "./layout.ts";
import { DiskPartials } from "./partial_files.ts";
import { StagedFile } from "./staged_file.ts";

export interface DiskStoreOptions {
  /** Directory the pieces live under; `DiskStore.create` makes it (with tmp/) if missing. */
  root: string;
  /** Let the directory's group read committed pieces, and only them (see above). */
  shareWithGroup?: boolean;
}

/** Modes when sharing with the group: pieces readable, directories enterable, tmp/ private. */
const SHARED_PIECE_MODE = 0o640;
const SHARED_DIR_MODE = 0o710;
const PRIVATE_DIR_MODE = 0o700;
/**
 * How many answers (whole pieces, ranges sent as answers) go out by the read loop at once; the
 * rest by the runtime's stream. The loop is faster (file_range.ts), but each answer on it holds
 * a few fresh 1 MiB buffers until the socket takes them: 64 downloads of 100 MiB at once peaked
 * at 178 MiB of RSS with four on the loop (167 MiB with none), its spent buffers collected every
 * 16 MiB (read_garbage.ts).
 */
export const LOOP_READERS = 4;

export class DiskStore implements PieceStore {
  readonly source = "stage";
  readonly #root: string;
  readonly #tempDir: string;
  readonly #share: boolean;
  /** Shard directories known to exist, so the hot path skips mkdir and its fsync. */
  readonly #knownShards = new Set<string>();
  /** Temp files of this process's uploads from their creation until they settle. */
  readonly #inUse = new Set<string>();
  readonly partials: PartialStore;
  /** Answers being sent by the read loop now (at most LOOP_READERS). */
  #loopReaders = 0;
  /** The loop's spent buffers, collected early (read_garbage.ts). */
  readonly #garbage = new ReadGarbage();

  /** Creates the root (and tmp/) if missing and returns a store on it. */
  static async create(options: DiskStoreOptions): Promise<DiskStore> {
    const store = new DiskStore(options);
    await Deno.mkdir(store.#tempDir, { recursive: true });
    if (store.#share) await store.#shareExisting();
    return store;
  }

  constructor(options: DiskStoreOptions) {
    this.#root = options.root.replace(/\/+$/, "") || "/";
    this.#tempDir = joinPath(this.#root, TEMP_DIR);
    this.#share = options.shareWithGroup ?? false;
    this.partials = new DiskPartials({
      root: this.#root,
      prepareTarget: (key) => this.#prepareTarget(key),
      pieceMode: this.#share ? SHARED_PIECE_MODE : 0o644,
    });
  }

  async check(): Promise<StoreHealth> {
    try {
      const info = await Deno.stat(this.#root);
      if (!info.isDirectory) return { ok: false, detail: `${this.#root} is not a directory` };
      await Deno.mkdir(this.#tempDir, { recursive: true });
      const probe = joinPath(this.#tempDir, `health-${crypto.randomUUID()}${TEMP_SUFFIX}`);
      this.#inUse.add(probe);
      try {
        await Deno.writeFile(probe, new Uint8Array(0), { createNew: true });
        await Deno.remove(probe);
      } finally {
        this.#inUse.delete(probe);
      }
      return { ok: true, detail: `writable at ${this.#root}` };
    } catch (error) {
      return { ok: false, detail: `Cannot use ${this.#root}: ${(error as Error).message}` };
    }
  }

  async stat(key: string): Promise<PieceStat | null> {
    try {
      const info = await Deno.stat(this.#pathOf(key));
      // An unknown age counts as new: an orphan is removed only once known to be old.
      return { size: info.size, modifiedAt: info.mtime?.getTime() ?? Date.now() };
    } catch (error) {
      return await this.#missingOrOffline(error);
    }
  }

  async open(
    key: string,
    range?: ByteRange,
    options: OpenOptions = {},
  ): Promise<OpenedPiece | null> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#pathOf(key), { read: true });
    } catch (error) {
      return await this.#missingOrOffline(error);
    }
    try {
      // fstat and lseek on an open file never wait on the disk: done in place, not as two more
      // trips through the event loop per answer.
      const { size } = file.statSync();
      // Either stream closes the file when it ends, fails or is cancelled. A whole piece, and a
      // range sent as an answer, go out by the read loop, LOOP_READERS at once; beyond that by
      // the runtime's own stream (the server cuts a range's at its Content-Length), which holds
      // no buffer of ours: the loop's memory stays bounded however many download at once.
      const length = range === undefined ? size : bytesInRange(range, size);
      if (range !== undefined && range.offset > 0) {
        file.seekSync(range.offset, Deno.SeekMode.Start);
      }
      if (range !== undefined && !options.answerWithLength) {
        return { size, body: fileRangeStream(file, length, { garbage: this.#garbage }) };
      }
      if (this.#loopReaders >= LOOP_READERS) return { size, body: file.readable };
      this.#loopReaders++;
      const onClose = () => this.#loopReaders--;
      return { size, body: fileRangeStream(file, length, { onClose, garbage: this.#garbage }) };
    } catch (error) {
      file.close();
      throw toStoreError(error);
    }
  }

  localFileOf(key: string): string {
    return this.#pathOf(key);
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
    this.#inUse.add(tempPath);
    const settled = () => this.#inUse.delete(tempPath);
    let file;
    let pumped;
    try {
      file = await this.#createTempFile(tempPath);
    } catch (error) {
      settled();
      throw error;
    }
    try {
      pumped = await pumpBody(body, options, (chunk) => writeAll(file, chunk));
      await file.sync();
      // Still in tmp/ (private): readable by the group only once committed.
      if (this.#share) await Deno.chmod(tempPath, SHARED_PIECE_MODE);
    } catch (error) {
      file.close();
      await removeQuietly(tempPath);
      settled();
      throw toStoreError(error, { unexpected: "rejected" });
    }
    file.close();
    return new StagedFile({
      tempPath,
      size: pumped.size,
      sha256: pumped.sha256,
      settled,
      prepareTarget: (key) => this.#prepareTarget(key),
    });
  }

  /** A committed key's path, its shard made (and made durable) if needed. */
  async #prepareTarget(key: string): Promise<{ path: string; directory: string }> {
    const shard = shardOf(key);
    await this.#ensureShard(shard);
    const directory = joinPath(this.#root, shard);
    return { path: joinPath(directory, key), directory };
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
    for await (const entry of this.#entries()) {
      if (entry.isFile) yield entry.name;
    }
  }

  async cleanup(): Promise<{ removedTemporaryFiles: number }> {
    let removed = 0;
    for await (const entry of readDirQuietly(this.#tempDir)) {
      const path = joinPath(this.#tempDir, entry.name);
      if (!entry.name.endsWith(TEMP_SUFFIX) || this.#inUse.has(path)) continue;
      if (await removeQuietly(path)) removed++;
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

  async #ensureShard(shard: string): Promise<void> {
    if (this.#knownShards.has(shard)) return;
    const [outer] = shard.split("/");
    const outerDir = joinPath(this.#root, outer);
    const created = await mkdirIfMissing(outerDir);
    if (created && this.#share) await Deno.chmod(outerDir, SHARED_DIR_MODE);
    const innerDir = joinPath(this.#root, shard);
    if (await mkdirIfMissing(innerDir)) {
      if (this.#share) await Deno.chmod(innerDir, SHARED_DIR_MODE);
      await syncDirectory(outerDir);
    }
    // A new directory entry is durable only once its parent is synced too.
    if (created) await syncDirectory(this.#root);
    this.#knownShards.add(shard);
  }

  /** Gives what is stored already the shared modes (each start: pieces may come from a restore). */
  async #shareExisting(): Promise<void> {
    await Deno.chmod(this.#root, SHARED_DIR_MODE);
    await Deno.chmod(this.#tempDir, PRIVATE_DIR_MODE);
    for await (const entry of this.#entries()) {
      await Deno.chmod(entry.path, entry.isFile ? SHARED_PIECE_MODE : SHARED_DIR_MODE);
    }
  }

  /** The shard directories and the committed pieces in them (tmp/, partial/ left out), parents first. */
  async *#entries(): AsyncIterable<{ path: string; name: string; isFile: boolean }> {
    for await (const level1 of readDirQuietly(this.#root)) {
      if (!level1.isDirectory || level1.name === TEMP_DIR || level1.name === PARTIAL_DIR) continue;
      const dir1 = joinPath(this.#root, level1.name);
      yield { path: dir1, name: level1.name, isFile: false };
      for await (const level2 of readDirQuietly(dir1)) {
        if (!level2.isDirectory) continue;
        const dir2 = joinPath(dir1, level2.name);
        yield { path: dir2, name: level2.name, isFile: false };
        for await (const entry of readDirQuietly(dir2)) {
          if (entry.isFile) {
            yield { path: joinPath(dir2, entry.name), name: entry.name, isFile: true };
          }
        }
      }
    }
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
