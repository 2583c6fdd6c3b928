/**
 * Why: a stand-in for a Curio PDP node running Warm Storage, for tests that
 * hand pieces to a storage provider: Curio needs a Lotus chain node and cannot
 * run here. It behaves as Curio's code does (filecoin-project/curio, pdp/ and
 * tasks/pdpv0/; each module names the file it follows), not as a client
 * assumes, so a client that passes against it has met Curio's rules: pulls
 * fetched for real and checked by PieceCID, signatures recovered as the Warm
 * Storage contract recovers them, delays, retries, backpressure and blocks.
 * It listens on 127.0.0.1 on a free port and stops by itself: timers,
 * downloads and the listener all end in stop() (or `await using`).
 *
 * @example
 * await using pdp = await startFakePdp({ confirmAfterMs: 20, settleAfterMs: 20 });
 * await SP.ping(pdp.url);
 */
import type { SignatureRecord } from "./chain.ts";
import { type FakePdpOptions, resolveOptions } from "./config.ts";
import { FakeCore } from "./core.ts";
import { parsePieceCidV2 } from "./piece.ts";
import type { FetchRecord } from "./pull_worker.ts";
import { itemStatus, type PullStatus } from "./pulls.ts";
import { type DownMode, PdpServer } from "./server.ts";

export type { FakePdpOptions } from "./config.ts";
export type { SignatureRecord } from "./chain.ts";
export type { FetchRecord } from "./pull_worker.ts";
export type { DownMode } from "./server.ts";

export interface PullItemView {
  pieceCid: string;
  sourceUrl: string;
  status: PullStatus;
  attempts: number;
  /** Why it failed, as Curio keeps it in its table (never in the pull answer). */
  failReason?: string;
}

export interface AddedPieceView {
  dataSetId: number;
  pieceId: number;
  pieceCid: string;
  txHash: string;
  /** Removed on chain by a proving period after a scheduled removal. */
  removed: boolean;
}

export class FakePdp implements AsyncDisposable {
  readonly options: FakePdpOptions;
  readonly #core: FakeCore;
  readonly #server: PdpServer;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(options: FakePdpOptions) {
    this.options = options;
    this.#core = new FakeCore(options);
    this.#server = new PdpServer(this.#core);
    this.#server.listen();
    this.#timer = setInterval(() => this.#core.tick(), options.schedulerIntervalMs);
  }

  /** The service URL a client is given ("http://127.0.0.1:PORT/"). */
  get url(): string {
    return `http://127.0.0.1:${this.#server.port}/`;
  }

  // Controls

  /** Every pull of this piece (v2) fails, nothing fetched. */
  refusePiece(pieceCid: string): void {
    this.#core.worker.refused.add(parsePieceCidV2(pieceCid).v2);
  }

  /** Takes a refused piece again (a new pull of it is fetched and checked). */
  acceptPiece(pieceCid: string): void {
    this.#core.worker.refused.delete(parsePieceCidV2(pieceCid).v2);
  }

  /**
   * Adds are sent to the chain but not answered until releaseAddAnswers(): a
   * client that dies meanwhile never learns its add's Location.
   */
  holdAddAnswers(): void {
    this.#core.addAnswers ??= Promise.withResolvers<void>();
  }

  releaseAddAnswers(): void {
    this.#core.addAnswers?.resolve();
    this.#core.addAnswers = null;
  }

  /** Accepted pulls stay pending, nothing fetched, until releasePulls(). */
  holdPulls(): void {
    this.#core.worker.held = true;
  }

  releasePulls(): void {
    this.#core.worker.held = false;
    this.#core.tick();
  }

  /** "refused": the port closes; "503": every request is answered 503. */
  goDown(mode: DownMode): Promise<void> {
    return this.#server.goDown(mode);
  }

  /** Back up, on the same port. */
  comeUp(): void {
    this.#server.comeUp();
  }

  /** Moves everything to the clock's now (for a test driving `now` by hand). */
  tick(): Promise<void> {
    return this.#core.tick();
  }

  // Inspection

  /** Pieces (v2) the node holds: pulled, fetched and verified. */
  pulledPieces(): string[] {
    return [...this.#core.worker.parked.values()].map((piece) => piece.v2);
  }

  /** Every GET of a source, in order. */
  fetches(): FetchRecord[] {
    return [...this.#core.worker.fetches];
  }

  /** Every accepted pull item, in the order accepted. */
  pullItems(): PullItemView[] {
    return [...this.#core.pulls.items()].map((item) => ({
      pieceCid: item.piece.v2,
      sourceUrl: item.sourceUrl,
      status: itemStatus(item),
      attempts: item.attempts,
      failReason: item.failReason,
    }));
  }

  /** Pieces recorded in data sets, with the ids the chain gave them. */
  addedPieces(): AddedPieceView[] {
    return [...this.#core.records.dataSets.values()].flatMap((dataSet) =>
      [...dataSet.pieces.values()].map((row) => ({
        dataSetId: dataSet.id,
        pieceId: row.pieceId,
        pieceCid: row.piece.v2,
        txHash: row.addHash,
        removed: row.removed,
      }))
    );
  }

  /** Every signature recovered from a request's extraData, in order. */
  signatures(): SignatureRecord[] {
    return [...this.#core.chain.signatures];
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.releaseAddAnswers();
    await this.#server.close();
    await this.#core.worker.stop();
    await this.#core.tick();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/** Starts a fake provider; options default to Curio's own values (see config.ts). */
export function startFakePdp(options: Partial<FakePdpOptions> = {}): Promise<FakePdp> {
  return Promise.resolve(new FakePdp(resolveOptions(options)));
}
