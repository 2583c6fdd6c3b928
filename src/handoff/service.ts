/**
 * The hand-off as the rest of the server sees it (docs/handoff.md): built by
 * the composition root when `--handoff pdp` is on (null otherwise, and then
 * nothing a client sees changes), it queues each committed piece, runs the
 * worker as one of the server's jobs, shows each deal's `handoff`, lets an
 * upload wait for the provider (`--handoff-wait`), and reports to /healthz
 * and /metrics.
 *
 * The provider's client (synapse-core, viem) is loaded only here, and only
 * when the hand-off is on: a server that never hands off never pays for it.
 */
import type { HandoffConfig } from "../config/types.ts";
import type { HandoffPiece, HandoffRecords, HandoffState } from "../domain/handoff_records.ts";
import type { SweepTurn } from "../domain/locks.ts";
import type { Clock } from "../kernel/clock.ts";
import { toRfc3339 } from "../kernel/clock.ts";
import type { Logger } from "../kernel/log.ts";
import type { HandoffView } from "../kernel/wire.ts";
import type { HandoffHealth } from "../kernel/health_wire.ts";
import type { HandoffWorker } from "./worker.ts";
import type { RequestOutcome } from "./pdp_provider.ts";

/** Bound of one request to the provider. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long an add in doubt is looked for in the data set before it is sent again (20 epochs). */
const RECONCILE_MS = 10 * 60_000;
/** States an upload waiting for the provider stops at: it holds the piece, or will not. */
const SETTLED: readonly HandoffState[] = ["adding", "live", "failed", "ineligible"];

export interface HandoffDeps {
  config: HandoffConfig;
  baseUrl: string;
  records: HandoffRecords;
  turn: SweepTurn;
  clock: Clock;
  logger: Logger;
  /** Overrides RECONCILE_MS (tests). */
  reconcileMs?: number;
}

/** Provider requests by route and outcome, and their time: for /metrics. */
export interface HandoffRequestStats {
  count: Map<string, number>;
  seconds: Map<string, { sum: number; count: number }>;
}

export class Handoff {
  readonly #worker: HandoffWorker;
  readonly #records: HandoffRecords;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly waitSeconds: number;
  readonly requests: HandoffRequestStats;
  /** The address that pays, for the start-up summary. */
  readonly payer: string;

  private constructor(
    worker: HandoffWorker,
    deps: HandoffDeps,
    requests: HandoffRequestStats,
    payer: string,
  ) {
    this.#worker = worker;
    this.#records = deps.records;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.waitSeconds = deps.config.waitSeconds;
    this.requests = requests;
    this.payer = payer;
  }

  /** The hand-off of `--handoff pdp`, or null for `--handoff off`. Throws on an unusable key. */
  static async open(deps: HandoffDeps): Promise<Handoff | null> {
    const { config } = deps;
    if (config.mode === "off") return null;
    const [{ Payer }, { PdpProvider }, { HandoffWorker }] = await Promise.all([
      import("./payer.ts"),
      import("./pdp_provider.ts"),
      import("./worker.ts"),
    ]);
    const payer = await Payer.fromKeyFile({
      keyFile: config.keyFile!,
      chainId: config.chainId!,
      recordKeeper: config.recordKeeper!,
      payee: config.payee!,
      payer: config.payer,
    });
    const requests: HandoffRequestStats = { count: new Map(), seconds: new Map() };
    const onRequest = (route: string, outcome: RequestOutcome, ms: number) => {
      const key = `${route} ${outcome}`;
      requests.count.set(key, (requests.count.get(key) ?? 0) + 1);
      const time = requests.seconds.get(route) ?? { sum: 0, count: 0 };
      time.sum += ms / 1000;
      time.count++;
      requests.seconds.set(route, time);
    };
    const worker = new HandoffWorker({
      records: deps.records,
      provider: new PdpProvider({ url: config.pdpUrl!, timeoutMs: REQUEST_TIMEOUT_MS, onRequest }),
      payer,
      recordKeeper: config.recordKeeper!,
      baseUrl: deps.baseUrl,
      clock: deps.clock,
      logger: deps.logger,
      turn: deps.turn,
      reconcileMs: deps.reconcileMs ?? RECONCILE_MS,
    });
    return new Handoff(worker, deps, requests, payer.payer);
  }

  get provider(): string {
    return this.#worker.provider;
  }

  /** One run of the worker: the "handoff" job. */
  run(signal: AbortSignal): Promise<void> {
    return this.#worker.run(signal);
  }

  /** Queues a committed piece (the commit hook: must not block, never throws). */
  committed(cid: string): void {
    void this.#worker.enqueue([cid]);
  }

  async viewOf(cid: string): Promise<HandoffView | null> {
    const piece = await this.#records.get(cid);
    return piece ? viewOf(piece) : null;
  }

  async viewsOf(cids: readonly string[]): Promise<Map<string, HandoffView>> {
    const pieces = await this.#records.getMany(cids);
    return new Map([...pieces].map(([cid, piece]) => [cid, viewOf(piece)]));
  }

  /**
   * Waits (at most `ms`) until the provider holds the piece or will not take
   * it; the piece's hand-off as it then stands (null: nothing recorded).
   */
  async waitFor(cid: string, ms: number, signal?: AbortSignal): Promise<HandoffPiece | null> {
    const deadline = this.#clock.now() + ms;
    await this.#worker.enqueue([cid]);
    while (true) {
      const piece = await this.#records.get(cid);
      if (piece !== null && SETTLED.includes(piece.state)) return piece;
      const left = deadline - this.#clock.now();
      if (left <= 0 || signal?.aborted) return piece;
      // The worker's next run may move it; another instance's run is seen within 250 ms.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const pause = new Promise((resolve) => timer = setTimeout(resolve, Math.min(left, 250)));
      await Promise.race([this.#worker.nextRun(), pause]);
      clearTimeout(timer);
    }
  }

  async health(): Promise<HandoffHealth> {
    const status = this.#worker.status();
    const { byState, oldestQueuedAt } = await this.#records.counts();
    return {
      provider: this.provider,
      answering: status.answering,
      lastAnswerAt: status.lastAnswerAt === null ? null : toRfc3339(status.lastAnswerAt),
      problem: status.problem,
      pieces: Object.fromEntries(byState.map((c) => [c.state, c.pieces])),
      oldestQueuedAt: oldestQueuedAt === null ? null : toRfc3339(oldestQueuedAt),
    };
  }

  counts(): ReturnType<HandoffRecords["counts"]> {
    return this.#records.counts();
  }

  /** Says a refused upload's piece will not be handed off (its deal was withdrawn). */
  logRefused(cid: string, error: string | null): void {
    this.#logger.info("an upload waited for the provider, which refused its piece", { cid, error });
  }
}

export function viewOf(piece: HandoffPiece): HandoffView {
  return {
    state: piece.state,
    provider: piece.provider,
    pieceCid: piece.pieceCidV2,
    dataSetId: piece.dataSetId === null ? null : String(piece.dataSetId),
    pieceId: piece.pieceId === null ? null : String(piece.pieceId),
    txHash: piece.txHash,
    error: piece.error,
    updatedAt: toRfc3339(piece.updatedAt),
  };
}
