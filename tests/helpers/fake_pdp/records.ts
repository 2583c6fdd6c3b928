/**
 * Why: what a client polls is Curio's own bookkeeping, not the chain: a create
 * or an add is "pending" until its transaction lands, then "confirmed" (ok /
 * addMessageOk true) while Curio's watcher has not yet recorded the data set
 * or the pieces, and only then `dataSetCreated: true` with `dataSetId`, or
 * `piecesAdded: true` with `confirmedPieceIds` (filecoin-project/curio:
 * pdp/handlers.go status handlers, tasks/pdpv0/dataset_create_watch.go,
 * dataset_addpiece_watch.go). A data set and its pieces show in
 * GET /pdp/data-sets/{id} from that record on; a piece whose removal was
 * scheduled stays listed until the proving period removes it on chain
 * (tasks/pdpv0/watch_proving_period.go marks it removed).
 */
import type { Hex } from "viem";
import type { FakeChain, Tx } from "./chain.ts";
import type { PieceInfo } from "./piece.ts";

export interface CreateRecord {
  tx: Tx;
  /** Curio's data_set_created: the watcher has recorded the data set. */
  created: boolean;
  dataSetId?: number;
}

export interface AddRecord {
  tx: Tx;
  /** Null until the create of a create-and-add is recorded. */
  dataSetId: number | null;
  pieces: PieceInfo[];
  added: boolean;
  pieceIds?: number[];
}

export interface PieceRow {
  pieceId: number;
  piece: PieceInfo;
  addHash: Hex;
  rmHash?: Hex;
  removed: boolean;
}

export interface DataSetRow {
  id: number;
  createHash: Hex;
  pieces: Map<number, PieceRow>;
}

export class CurioRecords {
  readonly creates = new Map<Hex, CreateRecord>();
  readonly adds = new Map<Hex, AddRecord>();
  readonly dataSets = new Map<number, DataSetRow>();
  readonly #settleAfterMs: number;

  constructor(settleAfterMs: number) {
    this.#settleAfterMs = settleAfterMs;
  }

  /** A create; with pieces (create-and-add) their add is recorded under the same hash. */
  recordCreate(tx: Tx, pieces: PieceInfo[] | null): void {
    this.creates.set(tx.hash, { tx, created: false });
    if (pieces) this.adds.set(tx.hash, { tx, dataSetId: null, pieces, added: false });
  }

  recordAdd(tx: Tx, dataSetId: number, pieces: PieceInfo[]): void {
    this.adds.set(tx.hash, { tx, dataSetId, pieces, added: false });
  }

  recordRemoval(tx: Tx, dataSetId: number, pieceIds: number[]): void {
    const dataSet = this.dataSets.get(dataSetId);
    for (const id of pieceIds) {
      const row = dataSet?.pieces.get(id);
      if (row) row.rmHash = tx.hash;
    }
  }

  /** Curio's watchers: record what landed `settleAfterMs` ago, mark removed what left the chain. */
  settle(now: number, chain: FakeChain): void {
    const due = (tx: Tx) => tx.success === true && tx.landedAt! + this.#settleAfterMs <= now;
    for (const [hash, create] of this.creates) {
      if (create.created || !due(create.tx)) continue;
      create.created = true;
      create.dataSetId = create.tx.effect!.dataSetId!;
      this.dataSets.set(create.dataSetId, {
        id: create.dataSetId,
        createHash: hash,
        pieces: new Map(),
      });
      const add = this.adds.get(hash);
      if (add) add.dataSetId = create.dataSetId;
    }
    for (const add of this.adds.values()) {
      if (add.added || add.dataSetId === null || !due(add.tx)) continue;
      const dataSet = this.dataSets.get(add.dataSetId);
      if (!dataSet) continue;
      add.added = true;
      add.pieceIds = add.tx.effect!.pieceIds!;
      add.pieceIds.forEach((pieceId, i) => {
        const row = { pieceId, piece: add.pieces[i], addHash: add.tx.hash, removed: false };
        dataSet.pieces.set(pieceId, row);
      });
    }
    for (const dataSet of this.dataSets.values()) {
      for (const row of dataSet.pieces.values()) {
        if (row.rmHash && !row.removed && !chain.isLive(dataSet.id, row.pieceId)) {
          row.removed = true;
        }
      }
    }
  }
}
