/**
 * A finished resumable upload of several objects (partial_writer.ts), staged:
 * `commit` joins them inside S3 into the piece's key, one UploadPartCopy per
 * object (every one but the last is at least 5 MiB, as S3 requires), then
 * deletes them. The piece's key appears only when the multipart upload
 * completes, so it never holds half a piece; a failed join is aborted and the
 * objects go. Its digest, when not computed on the way, is read back object
 * after object.
 */
import { createHash } from "node:crypto";
import { SettlingStagedPiece } from "../staged_piece.ts";
import type { StagedBytes } from "../staged_piece.ts";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  uploadPartCopy,
} from "./multipart_api.ts";
import type { CompletedPart } from "./multipart_api.ts";
import type { PartObject } from "./partial_writer.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";
import { StoreError } from "../driver.ts";

export interface StagedPartsOptions extends StagedBytes {
  client: S3Client;
  objects: readonly PartObject[];
  /** The object key a piece key is committed to. */
  pieceKeyOf(key: string): string;
  /** UploadPartCopy calls in flight. */
  concurrency: number;
}

export class StagedParts extends SettlingStagedPiece<StagedPartsOptions> {
  protected async readSha256(): Promise<string> {
    const hash = createHash("sha256");
    for (const object of this.options.objects) {
      const response = await this.options.client.open({ method: "GET", key: object.key });
      try {
        for await (const chunk of response.body!) hash.update(chunk);
      } catch (error) {
        throw new StoreError("offline", `S3 stopped sending ${object.key}`, { cause: error });
      }
    }
    return hash.digest("hex");
  }

  protected async moveInto(key: string): Promise<void> {
    const { client, objects, concurrency } = this.options;
    try {
      const target = await createMultipartUpload(client, this.options.pieceKeyOf(key));
      try {
        const parts: CompletedPart[] = [];
        let next = 0;
        let failed = false;
        const copyNext = async () => {
          while (next < objects.length && !failed) {
            const index = next++;
            const object = objects[index];
            parts.push(
              await uploadPartCopy(client, target, {
                partNumber: index + 1,
                sourceKey: object.key,
                first: 0,
                last: object.size - 1,
              }),
            );
          }
        };
        const workers = Array.from(
          { length: Math.min(concurrency, objects.length) },
          () =>
            copyNext().catch((error) => {
              failed = true;
              throw error;
            }),
        );
        // Settled, not Promise.all: no part copy may still run when the upload is aborted.
        const refused = (await Promise.allSettled(workers)).find((r) => r.status === "rejected");
        if (refused) throw refused.reason;
        await completeMultipartUpload(client, target, { parts, expectedBytes: this.size });
      } catch (error) {
        await abortMultipartUpload(client, target).catch(() => {});
        throw error;
      }
    } finally {
      await this.remove();
    }
  }

  protected async remove(): Promise<void> {
    await Promise.all(this.options.objects.map((o) => deleteQuietly(this.options.client, o.key)));
  }
}
