/**
 * Resumable uploads on disk: one file per upload, `<root>/partial/<id>`,
 * appended at the recorded size by each request and fsynced before the new
 * size is recorded. A crash after the write and before the record leaves
 * bytes past the recorded size; the next append truncates them first, so the
 * file always ends up holding exactly what was recorded. The last byte's
 * commit renames the file into its shard like any staged piece
 * (staged_file.ts). Unlike tmp/, partial/ is not emptied at start-up: its
 * uploads continue after a restart, until they finish, end or expire.
 */
import {
  joinPath,
  readDirQuietly,
  removeQuietly,
  syncDirectory,
  writeAll,
} from "../../kernel/fs/files.ts";
import { pumpBody } from "../body_pump.ts";
import { StoreError } from "../driver.ts";
import type {
  AppendOptions,
  AppendResult,
  PartialState,
  PartialStore,
  StagedPiece,
} from "../driver.ts";
import { toStoreError } from "./fs_errors.ts";
import { assertSafeKey, PARTIAL_DIR } from "./layout.ts";
import { StagedFile } from "./staged_file.ts";
import type { StagedFileOptions } from "./staged_file.ts";

/** Read-back buffer: large enough that rebuilding a hash is not syscall-bound. */
const READ_BYTES = 1024 * 1024;

export interface DiskPartialsOptions {
  /** The store's root (<data-dir>/pieces). */
  root: string;
  /** Where a committed key lives (the disk store's shard, made if missing). */
  prepareTarget: StagedFileOptions["prepareTarget"];
  /** The mode of a committed piece (the disk store's: 0644, or 0640 shared with the group). */
  pieceMode: number;
}

export class DiskPartials implements PartialStore {
  readonly #options: DiskPartialsOptions;
  readonly #dir: string;

  constructor(options: DiskPartialsOptions) {
    this.#options = options;
    this.#dir = joinPath(options.root, PARTIAL_DIR);
  }

  async create(id: string, _options: { length: number }): Promise<PartialState> {
    const path = this.#pathOf(id);
    try {
      // Private until committed, as tmp/ is: partial bytes are nobody's to read yet.
      await Deno.mkdir(this.#dir, { recursive: true, mode: 0o700 });
      const file = await Deno.open(path, { createNew: true, write: true, mode: 0o600 });
      file.close();
      await syncDirectory(this.#dir);
    } catch (error) {
      throw toStoreError(error, { missingMeansOffline: true, unexpected: "rejected" });
    }
    return { id, size: 0 };
  }

  async append(
    state: PartialState,
    body: ReadableStream<Uint8Array>,
    options: AppendOptions,
  ): Promise<AppendResult> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#pathOf(state.id), { write: true });
    } catch (error) {
      await body.cancel().catch(() => {});
      throw missingOr(error, state.id);
    }
    try {
      // Bytes past the recorded size were never acknowledged: they go.
      await file.truncate(state.size);
      await file.seek(state.size, Deno.SeekMode.Start);
      const pumped = await pumpBody(
        body,
        { ...options, computeSha256: false, keepCutBody: true },
        (chunk) => writeAll(file, chunk),
      );
      await file.sync();
      return { state: { id: state.id, size: state.size + pumped.size }, cut: pumped.cut };
    } catch (error) {
      throw toStoreError(error, { unexpected: "rejected" });
    } finally {
      file.close();
    }
  }

  read(
    state: PartialState,
    range: { from: number; to: number; signal?: AbortSignal },
  ): ReadableStream<Uint8Array> {
    const path = this.#pathOf(state.id);
    return ReadableStream.from(readRange(path, range));
  }

  staged(state: PartialState, digest: { sha256: string | null }): StagedPiece {
    const tempPath = this.#pathOf(state.id);
    return new StagedFile({
      tempPath,
      size: state.size,
      sha256: digest.sha256,
      prepareTarget: async (key) => {
        await Deno.chmod(tempPath, this.#options.pieceMode);
        return await this.#options.prepareTarget(key);
      },
    });
  }

  release(): Promise<void> {
    // One file per upload, cut back to the recorded size by the next append: nothing to drop.
    return Promise.resolve();
  }

  async remove(id: string): Promise<void> {
    await removeQuietly(this.#pathOf(id));
  }

  async *list(): AsyncIterable<{ id: string; modifiedMs: number }> {
    for await (const entry of readDirQuietly(this.#dir)) {
      if (!entry.isFile || !/^[0-9a-f]{32}$/.test(entry.name)) continue;
      const info = await Deno.stat(joinPath(this.#dir, entry.name)).catch(() => null);
      if (info) yield { id: entry.name, modifiedMs: info.mtime?.getTime() ?? 0 };
    }
  }

  #pathOf(id: string): string {
    assertSafeKey(id);
    return joinPath(this.#dir, id);
  }
}

async function* readRange(
  path: string,
  range: { from: number; to: number; signal?: AbortSignal },
): AsyncGenerator<Uint8Array> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw missingOr(error, path);
  }
  try {
    await file.seek(range.from, Deno.SeekMode.Start);
    for (let at = range.from; at < range.to;) {
      range.signal?.throwIfAborted();
      const buffer = new Uint8Array(Math.min(READ_BYTES, range.to - at));
      const n = await file.read(buffer);
      if (n === null) throw new StoreError("rejected", `Cannot read ${path}: it ends at ${at}`);
      at += n;
      yield buffer.subarray(0, n);
    }
  } finally {
    file.close();
  }
}

/** A partial upload whose file is gone (an operator removed it) cannot continue. */
function missingOr(error: unknown, what: string): unknown {
  if (error instanceof Deno.errors.NotFound) {
    return new StoreError("rejected", `The partial upload ${what} has no bytes on disk any more`, {
      cause: error,
    });
  }
  return toStoreError(error, { unexpected: "rejected" });
}
