/**
 * Why: the pull bookkeeping Curio answers from (filecoin-project/curio:
 * pdp/pull_types.go). A pull is stored once under its idempotency key
 * (sha256(extraData), dataSetId, recordKeeper as sent) and re-POSTing the
 * same body reads its status. The answer lists one entry per (piece, source)
 * ordered by PieceCIDv1 then source URL, each with its own status, and names
 * no failure reason; the batch is terminal only when every piece is, and then
 * `complete` if any piece completed, `failed` only if all failed. Admission
 * counts unique pending pieces, node-wide and per payer, and answers 429 with
 * Retry-After (1 min per 10 pieces over, 1 to 5 min) instead of queueing.
 */
import type { Address } from "viem";
import type { FakePdpOptions } from "./config.ts";
import { compareV1, type PieceInfo } from "./piece.ts";

export type PullStatus = "pending" | "inProgress" | "retrying" | "complete" | "failed";

export interface PullItem {
  pullId: number;
  piece: PieceInfo;
  sourceUrl: string;
  createdAt: number;
  complete: boolean;
  failed: boolean;
  /** Kept as Curio keeps fail_reason: in its table, never in the answer. */
  failReason?: string;
  /** A task is working on it (Curio: task_id set). */
  running: boolean;
  attempts: number;
  nextAttemptAt: number;
}

export interface PullRecord {
  id: number;
  key: string;
  payer: Address;
  items: PullItem[];
}

export interface PullAnswer {
  status: PullStatus;
  pieces: { pieceCid: string; status: PullStatus }[];
}

export const pieceKey = (piece: PieceInfo) => `${piece.v1}/${piece.rawSize}`;
export const isActive = (item: PullItem) => !item.complete && !item.failed;

export function itemStatus(item: PullItem): PullStatus {
  if (item.failed) return "failed";
  if (item.complete) return "complete";
  return item.running ? "inProgress" : "pending";
}

/** Curio's ComputeOverallStatus. */
export function overallStatus(statuses: PullStatus[]): PullStatus {
  if (statuses.length === 0) return "pending";
  for (const open of ["retrying", "inProgress", "pending"] as const) {
    if (statuses.includes(open)) return open;
  }
  if (statuses.every((s) => s === "failed")) return "failed";
  return statuses.includes("complete") ? "complete" : "pending";
}

export class PullStore {
  readonly pulls: PullRecord[] = [];
  readonly #byKey = new Map<string, PullRecord>();
  readonly #options: FakePdpOptions;

  constructor(options: FakePdpOptions) {
    this.#options = options;
  }

  byKey(key: string): PullRecord | undefined {
    return this.#byKey.get(key);
  }

  *items(): Iterable<PullItem> {
    for (const pull of this.pulls) yield* pull.items;
  }

  /** Stores the pull, or answers the seconds to wait when admission would overflow. */
  create(
    key: string,
    payer: Address,
    pieces: { piece: PieceInfo; sourceUrl: string }[],
  ): PullRecord | { retryAfterSeconds: number } {
    const refused = this.#backpressure(payer, pieces.map((p) => pieceKey(p.piece)));
    if (refused !== null) return { retryAfterSeconds: refused };
    const now = this.#options.now();
    const id = this.pulls.length + 1;
    const items = pieces.map(({ piece, sourceUrl }) => ({
      pullId: id,
      piece,
      sourceUrl,
      createdAt: now,
      complete: false,
      failed: false,
      running: false,
      attempts: 0,
      nextAttemptAt: now,
    }));
    const pull = { id, key, payer, items };
    this.pulls.push(pull);
    this.#byKey.set(key, pull);
    return pull;
  }

  answer(pull: PullRecord): PullAnswer {
    const sorted = [...pull.items].sort((a, b) =>
      compareV1(a.piece.v1, b.piece.v1) || compareV1(a.sourceUrl, b.sourceUrl)
    );
    const pieces = sorted.map((item) => ({ pieceCid: item.piece.v2, status: itemStatus(item) }));
    return { status: overallStatus(pieces.map((p) => p.status)), pieces };
  }

  /** Seconds to wait, or null to admit (Curio's enforceBackpressure). */
  #backpressure(payer: Address, incoming: string[]): number | null {
    const global = new Set(incoming);
    const client = new Set(incoming);
    const other = new Set<string>();
    for (const pull of this.pulls) {
      const mine = pull.payer.toLowerCase() === payer.toLowerCase();
      for (const item of pull.items.filter(isActive)) {
        global.add(pieceKey(item.piece));
        (mine ? client : other).add(pieceKey(item.piece));
      }
    }
    const o = this.#options;
    if (global.size > o.pullGlobalPendingLimit) {
      return retryAfterSeconds(global.size, o.pullGlobalPendingLimit);
    }
    const borrow = Math.floor(o.pullGlobalPendingLimit * o.pullSoloClientPendingPercent / 100);
    const clientLimit = Math.max(o.pullPerClientPendingLimit, borrow - other.size);
    if (client.size > clientLimit) return retryAfterSeconds(client.size, clientLimit);
    return null;
  }
}

/** One minute per 10 pieces over the limit, between 1 and 5 minutes. */
function retryAfterSeconds(pending: number, limit: number): number {
  const over = pending - limit;
  const minutes = over <= 0 ? 1 : 1 + Math.floor((over - 1) / 10);
  return Math.min(5, Math.max(1, minutes)) * 60;
}
