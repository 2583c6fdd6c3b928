/**
 * What the hand-off's steps (data_set_step.ts, piece_steps.ts) share with the
 * worker that runs them (worker.ts): its options, the provider's URL, and the
 * worker's handling of answers, refusals and failed pieces.
 */
import type { HandoffCall, HandoffPiece, HandoffRecords } from "../domain/handoff_records.ts";
import type { SweepTurn } from "../domain/locks.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import type { Payer } from "./payer.ts";
import type { PdpProvider } from "./pdp_provider.ts";

export interface HandoffWorkerOptions {
  records: HandoffRecords;
  provider: PdpProvider;
  payer: Payer;
  recordKeeper: string;
  /** The service's public base URL: the provider pulls <baseUrl>/piece/<PieceCIDv2>. */
  baseUrl: string;
  clock: Clock;
  logger: Logger;
  turn: SweepTurn;
  /** How long an add in doubt is looked for in the data set before it is sent again. */
  reconcileMs: number;
}

export interface StepContext {
  readonly o: HandoffWorkerOptions;
  /** The provider's service URL. */
  readonly provider: string;
  /** The provider answered (for /healthz). */
  answered(): void;
  /**
   * Sends a create or an add; a refusal the chain gives is counted on the
   * call (worker.ts). Null when the call was refused past its last try.
   */
  refusable<T>(call: HandoffCall, send: () => Promise<T>): Promise<T | null>;
  /** Moves pieces to failed, saying why. */
  fail(pieces: readonly HandoffPiece[], error: string): Promise<void>;
}

/** A create or an add refused this often starts over (a new clientDataSetId, a new nonce). */
export const MAX_REFUSALS = 3;

export interface AddBody {
  dataSetId: number;
  pieceCids: string[];
  extraData: string;
}

export interface RemoveBody {
  dataSetId: number;
  pieceId: number;
  extraData: string;
}

export function newCall(
  provider: string,
  kind: HandoffCall["kind"],
  body: unknown,
  at: number,
): HandoffCall {
  return {
    id: crypto.randomUUID(),
    provider,
    kind,
    body: JSON.stringify(body),
    statusUrl: null,
    txHash: null,
    refusals: 0,
    reconcileUntil: null,
    openedAt: at,
  };
}

/** The data set's pieces, read from the provider at most once per run. */
export class DataSetListing {
  readonly #provider: PdpProvider;
  readonly dataSetId: number;
  #pieces: Promise<{ pieceId: number; pieceCid: string }[]> | null = null;

  constructor(provider: PdpProvider, dataSetId: number) {
    this.#provider = provider;
    this.dataSetId = dataSetId;
  }

  pieces(): Promise<{ pieceId: number; pieceCid: string }[]> {
    this.#pieces ??= this.#provider.dataSetPieces(this.dataSetId);
    return this.#pieces;
  }
}
