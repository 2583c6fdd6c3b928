/**
 * The SHA-256 of pieces that were acknowledged before they were hashed.
 *
 * A first upload of a cid streams straight to disk: hashing on the thread that
 * receives the body cost about a quarter of upload throughput, and nothing
 * needs the digest until the same cid is uploaded again (then the catalog
 * asks `sha256Of`, which computes it on the spot). So after a commit the
 * digest is read back from the just-written file (page cache, not disk) one
 * piece at a time, and recorded. Pieces still waiting when the process stops
 * are found again at start-up (`resume`).
 */
import type { CatalogRecords, PieceRecord } from "../domain/catalog_records.ts";
import type { Logger } from "../kernel/log.ts";
import type { PieceStore } from "../driver/driver.ts";

export interface PieceDigestsOptions {
  store: PieceStore;
  records: CatalogRecords;
  logger: Logger;
}

export class PieceDigests {
  readonly #options: PieceDigestsOptions;
  /** Cids waiting for the background pass, oldest first. */
  readonly #queue = new Set<string>();
  /** One computation per cid, shared by the background pass and `sha256Of`. */
  readonly #inProgress = new Map<string, Promise<string | null>>();
  readonly #stop = new AbortController();
  #pass: Promise<void> | null = null;
  #idleWaiters: (() => void)[] = [];
  #failures = 0;

  constructor(options: PieceDigestsOptions) {
    this.#options = options;
  }

  /** Queues every piece whose digest is still unknown; returns how many. Call at start-up. */
  async resume(): Promise<number> {
    const cids = await this.#options.records.piecesWithoutSha256();
    for (const cid of cids) this.enqueue(cid);
    return cids.length;
  }

  /** Asks for cid's digest to be computed and recorded in the background. */
  enqueue(cid: string): void {
    if (this.#stop.signal.aborted) return;
    this.#queue.add(cid);
    this.#pass ??= this.#runPass();
  }

  /** Pieces waiting for (or in) the background pass, and digests that failed since start. */
  status(): { backlog: number; failures: number } {
    return { backlog: this.#queue.size + (this.#pass ? 1 : 0), failures: this.#failures };
  }

  /** Resolves once the background pass has nothing left to do. */
  whenIdle(): Promise<void> {
    if (this.#pass === null) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * The piece's SHA-256: as recorded, or computed (and recorded) now.
   * Throws when the store cannot be read or has lost the bytes.
   */
  async sha256Of(piece: PieceRecord): Promise<string> {
    if (piece.sha256 !== null) return piece.sha256;
    const digest = await this.#compute(piece.cid);
    if (digest === null) {
      throw new Error(`Piece ${piece.cid} is recorded but its bytes are missing`);
    }
    return digest;
  }

  /** Stops the background pass (a digest in progress is abandoned) and waits for it. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#pass;
  }

  async #runPass(): Promise<void> {
    // Let the upload that queued this answer first.
    await Promise.resolve();
    try {
      for (const cid of this.#queue) {
        this.#queue.delete(cid);
        if (this.#stop.signal.aborted) break;
        try {
          const digest = await this.#compute(cid);
          if (digest === null) {
            this.#failures++;
            this.#options.logger.error("piece missing from store", { cid });
          }
        } catch (error) {
          if (this.#stop.signal.aborted) break;
          // The piece keeps a null digest: it is retried at the next start, or computed
          // on demand if the same cid is uploaded again.
          this.#failures++;
          this.#options.logger.warn("cannot hash stored piece", { cid, error: String(error) });
        }
      }
    } finally {
      this.#pass = null;
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  #compute(cid: string): Promise<string | null> {
    let computing = this.#inProgress.get(cid);
    if (computing === undefined) {
      computing = (async () => {
        const digest = await this.#options.store.sha256Of(cid, { signal: this.#stop.signal });
        if (digest !== null) await this.#options.records.setPieceSha256(cid, digest);
        return digest;
      })().finally(() => this.#inProgress.delete(cid));
      this.#inProgress.set(cid, computing);
    }
    return computing;
  }
}
