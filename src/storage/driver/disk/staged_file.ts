/**
 * A piece the disk driver has staged: durable (fsynced) in tmp/ but invisible
 * until `commit` renames it into its shard and fsyncs the directory. Either
 * step failing removes the temp file, so nothing half-written is ever left.
 */
import { removeQuietly, sha256OfFile, syncDirectory } from "../../../fs/files.ts";
import type { StagedPiece } from "../driver.ts";
import { toStoreError } from "./fs_errors.ts";

export interface StagedFileOptions {
  tempPath: string;
  size: number;
  /** The digest computed while staging, or null when it was not asked for. */
  sha256: string | null;
  /** Where a committed key lives, its directory created (and made durable) if needed. */
  prepareTarget(key: string): Promise<{ path: string; directory: string }>;
}

export class StagedFile implements StagedPiece {
  readonly #options: StagedFileOptions;
  /** Committed or discarded: the temp file is gone (renamed or removed). */
  #settled = false;

  constructor(options: StagedFileOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#options.size;
  }

  get sha256(): string | null {
    return this.#options.sha256;
  }

  async computeSha256(): Promise<string> {
    if (this.#options.sha256 !== null) return this.#options.sha256;
    if (this.#settled) throw new Error("Cannot hash a staged piece after commit or discard");
    try {
      return await sha256OfFile(this.#options.tempPath);
    } catch (error) {
      throw toStoreError(error, { missingMeansOffline: true });
    }
  }

  async commit(key: string): Promise<void> {
    if (this.#settled) throw new Error("Cannot commit a staged piece twice");
    this.#settled = true;
    const { tempPath } = this.#options;
    try {
      const target = await this.#options.prepareTarget(key);
      await Deno.rename(tempPath, target.path);
      await syncDirectory(target.directory);
    } catch (error) {
      await removeQuietly(tempPath);
      throw toStoreError(error, { missingMeansOffline: true, unexpected: "rejected" });
    }
  }

  async discard(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await removeQuietly(this.#options.tempPath);
  }
}
