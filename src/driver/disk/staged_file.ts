/**
 * A piece the disk driver has staged: durable (fsynced) in tmp/ but invisible
 * until `commit` renames it into its shard and fsyncs the directory. Either
 * step failing removes the temp file, so nothing half-written is ever left.
 */
import { removeQuietly, sha256OfFile, syncDirectory } from "../../kernel/fs/files.ts";
import { SettlingStagedPiece } from "../staged_piece.ts";
import type { StagedBytes } from "../staged_piece.ts";
import { toStoreError } from "./fs_errors.ts";

export interface StagedFileOptions extends StagedBytes {
  tempPath: string;
  /** Where a committed key lives, its directory created (and made durable) if needed. */
  prepareTarget(key: string): Promise<{ path: string; directory: string }>;
}

export class StagedFile extends SettlingStagedPiece<StagedFileOptions> {
  protected async readSha256(): Promise<string> {
    try {
      return await sha256OfFile(this.options.tempPath);
    } catch (error) {
      throw toStoreError(error, { missingMeansOffline: true });
    }
  }

  protected async moveInto(key: string): Promise<void> {
    const { tempPath } = this.options;
    try {
      const target = await this.options.prepareTarget(key);
      await Deno.rename(tempPath, target.path);
      await syncDirectory(target.directory);
    } catch (error) {
      await removeQuietly(tempPath);
      throw toStoreError(error, { missingMeansOffline: true, unexpected: "rejected" });
    }
  }

  protected async remove(): Promise<void> {
    await removeQuietly(this.options.tempPath);
  }
}
