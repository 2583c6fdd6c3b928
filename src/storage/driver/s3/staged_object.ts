/**
 * A piece the S3 driver has staged: a whole object under the staging prefix,
 * invisible to open/stat/list until `commit` copies it, inside S3, to the
 * piece's key and deletes the staging object. A failed copy deletes it too,
 * so a refused commit leaves nothing; a delete that fails after a good copy
 * does not fail the commit (the piece is in place), and cleanup() removes the
 * leftover once stale.
 */
import type { StagedPiece } from "../driver.ts";
import { deleteQuietly } from "./s3_client.ts";
import type { S3Client } from "./s3_client.ts";
import { copyObject } from "./server_side_copy.ts";
import type { CopyLimits } from "./server_side_copy.ts";
import { sha256OfObject } from "./object_sha256.ts";

export interface StagedObjectOptions {
  client: S3Client;
  stagingKey: string;
  size: number;
  /** The digest computed while staging, or null when it was not asked for. */
  sha256: string | null;
  /** The object key a piece key is committed to. */
  pieceKeyOf(key: string): string;
  copyLimits: CopyLimits;
}

export class StagedObject implements StagedPiece {
  readonly #options: StagedObjectOptions;
  /** Committed or discarded: the staging object is gone (or left to cleanup). */
  #settled = false;

  constructor(options: StagedObjectOptions) {
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
    const digest = await sha256OfObject(this.#options.client, this.#options.stagingKey);
    if (digest === null) throw new Error("Cannot hash a staged piece: its staging object is gone");
    return digest;
  }

  async commit(key: string): Promise<void> {
    if (this.#settled) throw new Error("Cannot commit a staged piece twice");
    this.#settled = true;
    const { client, stagingKey } = this.#options;
    try {
      await copyObject(client, {
        from: stagingKey,
        to: this.#options.pieceKeyOf(key),
        size: this.#options.size,
        limits: this.#options.copyLimits,
      });
    } finally {
      await deleteQuietly(client, stagingKey);
    }
  }

  async discard(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await deleteQuietly(this.#options.client, this.#options.stagingKey);
  }
}
