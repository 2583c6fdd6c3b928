/**
 * What is read back from pieces after they were acknowledged: their SHA-256
 * and their PieceCIDv2.
 *
 * A first upload of a cid streams straight to disk: hashing on the thread that
 * receives the body cost about a quarter of upload throughput, and nothing
 * needs the digest until the same cid is uploaded again (then the catalog
 * asks `sha256Of`, which computes it on the spot). So after a commit the
 * digest is read back from the just-written file (page cache, not disk) one
 * piece at a time, and recorded. Pieces still waiting when the process stops
 * are found again at start-up (`resume`).
 *
 * The PieceCIDv2 (the name /piece/ serves a piece by, for a storage provider)
 * rides on the same pass: a piece whose cid fixes it (a PieceCIDv2, or a v1
 * and the size) had it recorded at upload, or gets it here without a read;
 * any other is hashed by the worker pool in the same read as its SHA-256
 * (piece_reading.ts, which paces it beside uploads). Pieces stored before
 * the PieceCIDv2 was recorded are found at start-up like missing digests.
 */
import type { CatalogRecords, PieceRecord } from "../domain/catalog_records.ts";
import type { Logger } from "../kernel/log.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { pieceCidV2Known } from "../kernel/piece_cid/piece_cid_forms.ts";
import { readStoredPiece } from "./piece_reading.ts";

export interface PieceDigestsOptions {
  store: PieceStore;
  records: CatalogRecords;
  logger: Logger;
  /** Hashes the PieceCIDv2 of pieces read back (null: on this thread). */
  pool: HashWorkerPool | null;
}

export class PieceDigests {
  readonly #options: PieceDigestsOptions;
  /** Cids waiting for the background pass, oldest first. */
  readonly #queue = new Set<string>();
  /** One SHA-256 computation per cid, shared by the background pass and `sha256Of`. */
  readonly #inProgress = new Map<string, Promise<string | null>>();
  readonly #stop = new AbortController();
  #pass: Promise<void> | null = null;
  #idleWaiters: (() => void)[] = [];
  #failures = 0;

  constructor(options: PieceDigestsOptions) {
    this.#options = options;
  }

  /**
   * Queues every piece whose digest or PieceCIDv2 is still unknown; returns how
   * many. Call at start-up.
   */
  async resume(): Promise<number> {
    const { records } = this.#options;
    const cids = new Set(await records.piecesWithoutSha256());
    for (const cid of await records.piecesWithoutPieceCidV2()) cids.add(cid);
    for (const cid of [...cids].sort()) this.enqueue(cid);
    return cids.size;
  }

  /** Asks for cid's missing digest and PieceCIDv2 to be computed and recorded in the background. */
  enqueue(cid: string): void {
    if (this.#stop.signal.aborted) return;
    this.#queue.add(cid);
    this.#pass ??= this.#runPass();
  }

  /** Pieces waiting for (or in) the background pass, and pieces that failed since start. */
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
    const digest = await this.#shared(piece.cid, () => this.#sha256Only(piece.cid));
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
          if (!await this.#fill(cid)) {
            this.#failures++;
            this.#options.logger.error("piece missing from store", { cid });
          }
        } catch (error) {
          if (this.#stop.signal.aborted) break;
          // What stays unknown is retried at the next start (a digest also on demand, if
          // the same cid is uploaded again).
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

  /** Records what cid's piece still lacks; false when its bytes are missing. */
  async #fill(cid: string): Promise<boolean> {
    const { records } = this.#options;
    const piece = await records.getPiece(cid);
    // Gone, or wrong bytes that a repair will replace: nothing to read back.
    if (piece === null || piece.removedAt !== null || piece.corruptAt !== null) return true;
    const known = piece.pieceCidV2 ?? pieceCidV2Known(cid, piece.size);
    if (known !== null) {
      if (piece.pieceCidV2 === null) await records.setPieceCidV2(cid, known);
      return piece.sha256 !== null || await this.#shared(cid, () => this.#sha256Only(cid)) !== null;
    }
    const read = this.#readBoth(piece);
    if (piece.sha256 === null) this.#shared(cid, async () => (await read)?.sha256 ?? null);
    const result = await read;
    if (result === null) return false;
    if (result.size !== piece.size) {
      throw new Error(`Stored bytes are ${result.size}, not ${piece.size}`);
    }
    await records.setPieceCidV2(cid, result.pieceCidV2);
    return true;
  }

  /** One read for the PieceCIDv2 and, when unknown, the SHA-256 (recorded here). */
  async #readBoth(piece: PieceRecord) {
    const { store, pool, records } = this.#options;
    const result = await readStoredPiece({
      store,
      pool,
      cid: piece.cid,
      sha256: piece.sha256 === null,
      signal: this.#stop.signal,
    });
    if (result?.sha256 && result.size === piece.size) {
      await records.setPieceSha256(piece.cid, result.sha256);
    }
    return result;
  }

  async #sha256Only(cid: string): Promise<string | null> {
    const digest = await this.#options.store.sha256Of(cid, { signal: this.#stop.signal });
    if (digest !== null) await this.#options.records.setPieceSha256(cid, digest);
    return digest;
  }

  /** The SHA-256 computation of cid in progress, or `start`ed now and shared. */
  #shared(cid: string, start: () => Promise<string | null>): Promise<string | null> {
    let computing = this.#inProgress.get(cid);
    if (computing === undefined) {
      computing = start().finally(() => this.#inProgress.delete(cid));
      this.#inProgress.set(cid, computing);
      // Its failure is its callers' (the pass's read may have none waiting here).
      computing.catch(() => {});
    }
    return computing;
  }
}
