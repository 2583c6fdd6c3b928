/**
 * What every driver's staged piece shares: its size and digest, and that it
 * settles once. Committed or discarded, its staged bytes are gone (moved into
 * place, removed, or left for cleanup), so it can be neither hashed nor
 * committed again, and a second discard does nothing. A driver says only how
 * to read the digest back, how to move the bytes into place, and how to throw
 * them away.
 */
import type { StagedPiece } from "./driver.ts";

/** What every driver knows of the bytes it staged. */
export interface StagedBytes {
  size: number;
  /** The digest computed while staging, or null when it was not asked for. */
  sha256: string | null;
  /**
   * Called once commit or discard has finished, however: the staged bytes are
   * no longer in use, so the store's cleanup may take whatever they left.
   */
  settled?(): void;
}

export abstract class SettlingStagedPiece<Options extends StagedBytes> implements StagedPiece {
  /** The driver's own description of where the staged bytes are, and how to commit them. */
  protected readonly options: Options;
  #settled = false;

  constructor(options: Options) {
    this.options = options;
  }

  get size(): number {
    return this.options.size;
  }

  get sha256(): string | null {
    return this.options.sha256;
  }

  async computeSha256(): Promise<string> {
    if (this.sha256 !== null) return this.sha256;
    if (this.#settled) throw new Error("Cannot hash a staged piece after commit or discard");
    return await this.readSha256();
  }

  async commit(key: string): Promise<void> {
    if (this.#settled) throw new Error("Cannot commit a staged piece twice");
    this.#settled = true;
    try {
      await this.moveInto(key);
    } finally {
      this.options.settled?.();
    }
  }

  async discard(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    try {
      await this.remove();
    } finally {
      this.options.settled?.();
    }
  }

  /** The SHA-256 of the staged bytes, read back (it was not computed on the way). */
  protected abstract readSha256(): Promise<string>;
  /** Makes the bytes durable and visible under key; a failure leaves no staged bytes behind. */
  protected abstract moveInto(key: string): Promise<void>;
  /** Throws the staged bytes away. */
  protected abstract remove(): Promise<void>;
}
