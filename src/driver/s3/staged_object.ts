/**
 * A piece the S3 driver has staged: a whole object under the staging prefix,
 * invisible to open/stat/list until `commit` copies it, inside S3, to the
 * piece's key and deletes the staging object. A failed copy deletes it too,
 * so a refused commit leaves nothing; a delete that fails after a good copy
 * does not fail the commit (the piece is in place), and cleanup() removes the
 * leftover on its next run (it is no longer in use).
 */
import { SettlingStagedPiece } from "../staged_piece.ts";
import type { StagedBytes } from "../staged_piece.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";
import { copyObject } from "./server_side_copy.ts";
import type { CopyLimits } from "./server_side_copy.ts";
import { sha256OfObject } from "./object_sha256.ts";

export interface StagedObjectOptions extends StagedBytes {
  client: S3Client;
  stagingKey: string;
  /** The object key a piece key is committed to. */
  pieceKeyOf(key: string): string;
  copyLimits: CopyLimits;
}

export class StagedObject extends SettlingStagedPiece<StagedObjectOptions> {
  protected async readSha256(): Promise<string> {
    const digest = await sha256OfObject(this.options.client, this.options.stagingKey);
    if (digest === null) throw new Error("Cannot hash a staged piece: its staging object is gone");
    return digest;
  }

  protected async moveInto(key: string): Promise<void> {
    const { client, stagingKey } = this.options;
    try {
      await copyObject(client, {
        from: stagingKey,
        to: this.options.pieceKeyOf(key),
        size: this.size,
        limits: this.options.copyLimits,
      });
    } finally {
      await deleteQuietly(client, stagingKey);
    }
  }

  protected async remove(): Promise<void> {
    await deleteQuietly(this.options.client, this.options.stagingKey);
  }
}
