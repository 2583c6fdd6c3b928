// deno-lint-ignore-file require-await -- async interface (domain/) over node:sqlite's synchronous answers.
/**
 * The hand-off's records in a data directory's database (migration 0013 says
 * what a row is; domain/handoff_records.ts what each method promises).
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import { transaction } from "./database.ts";
import { toRfc3339 } from "../../kernel/clock.ts";
import {
  HANDOFF_MAX_BYTES,
  HANDOFF_MIN_BYTES,
  HANDOFF_STATES,
  type HandoffCall,
  type HandoffCallKind,
  type HandoffCounts,
  type HandoffDataSet,
  type HandoffMove,
  type HandoffPiece,
  type HandoffRecords,
  type HandoffState,
  INELIGIBLE_REASON,
} from "../../domain/handoff_records.ts";

const PIECE_COLUMNS = `h.cid, h.provider, h.state, h.size, p.piece_cid_v2 AS pieceCidV2,
  h.data_set_id AS dataSetId, h.piece_id AS pieceId, h.tx_hash AS txHash, h.error,
  h.call_id AS callId, h.queued_ms AS queuedAt, h.updated_ms AS updatedAt`;
const PIECES_FROM = `handoff_pieces h LEFT JOIN pieces p ON p.cid = h.cid`;

const CALL_COLUMNS = `id, provider, kind, body, status_url AS statusUrl, tx_hash AS txHash,
  refusals, reconcile_until_ms AS reconcileUntil, opened_ms AS openedAt`;

/** A deal `d` that keeps its piece at $now: its term runs and its owner has not ended it. */
const KEEPING_DEAL = `d.term_ends_at > $now AND (d.deleted_at IS NULL OR d.deleted_at > $now)`;

/** The piece `p` is stored (not removed) and a deal keeps it. */
const KEPT = `NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
  AND EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid AND ${KEEPING_DEAL})`;

export class SqliteHandoffRecords implements HandoffRecords {
  readonly #db: Database;
  readonly #enqueue: StatementSync;
  readonly #get: StatementSync;
  readonly #ready: StatementSync;
  readonly #idle: StatementSync;
  readonly #unkept: StatementSync;
  readonly #inState: StatementSync;
  readonly #insertCall: StatementSync;
  readonly #intoCall: StatementSync;
  readonly #setCallStatus: StatementSync;
  readonly #updateCall: StatementSync;
  readonly #closeCall: StatementSync;
  readonly #leaveCall: StatementSync;
  readonly #openCalls: StatementSync;
  readonly #piecesOfCall: StatementSync;
  readonly #dataSet: StatementSync;
  readonly #saveDataSet: StatementSync;
  readonly #counts: StatementSync;
  readonly #oldestQueued: StatementSync;

  constructor(db: Database) {
    this.#db = db;
    // $cids: a JSON array of cids, or null for "any piece" (a scan).
    this.#enqueue = db.prepare(
      `INSERT INTO handoff_pieces (cid, provider, state, size, error, queued_ms, updated_ms)
       SELECT p.cid, $provider,
         CASE WHEN p.size < ${HANDOFF_MIN_BYTES} OR p.size > ${HANDOFF_MAX_BYTES}
              THEN 'ineligible' ELSE 'queued' END,
         p.size,
         CASE WHEN p.size < ${HANDOFF_MIN_BYTES} OR p.size > ${HANDOFF_MAX_BYTES}
              THEN '${INELIGIBLE_REASON}' END,
         $at, $at
       FROM pieces p
       WHERE ($cids IS NULL OR p.cid IN (SELECT value FROM json_each($cids)))
         AND ${KEPT}
         AND NOT EXISTS (SELECT 1 FROM handoff_pieces h WHERE h.cid = p.cid AND h.state <> 'removed')
       ORDER BY p.cid LIMIT $limit
       ON CONFLICT (cid) DO UPDATE SET provider = excluded.provider, state = excluded.state,
         size = excluded.size, data_set_id = NULL, piece_id = NULL, tx_hash = NULL,
         error = excluded.error, call_id = NULL, queued_ms = excluded.queued_ms,
         updated_ms = excluded.updated_ms`,
    );
    this.#get = db.prepare(`SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM} WHERE h.cid = ?`);
    this.#ready = db.prepare(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
       WHERE h.state = 'queued' AND h.call_id IS NULL AND p.piece_cid_v2 IS NOT NULL
       ORDER BY h.updated_ms, h.cid LIMIT ?`,
    );
    this.#idle = db.prepare(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
       WHERE h.state = ? AND h.call_id IS NULL ORDER BY h.updated_ms, h.cid LIMIT ?`,
    );
    this.#unkept = db.prepare(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
       WHERE h.state = 'live' AND h.call_id IS NULL
         AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = h.cid AND ${KEEPING_DEAL})
       ORDER BY h.updated_ms, h.cid LIMIT $limit`,
    );
    this.#inState = db.prepare(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
       WHERE h.state = ? AND h.cid > ? ORDER BY h.cid LIMIT ?`,
    );
    this.#insertCall = db.prepare(
      `INSERT INTO handoff_calls (id, provider, kind, body, status_url, tx_hash, refusals,
         reconcile_until_ms, opened_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#intoCall = db.prepare(
      `UPDATE handoff_pieces SET call_id = ?, state = ?, updated_ms = ? WHERE cid = ?`,
    );
    this.#setCallStatus = db.prepare(
      `UPDATE handoff_calls SET status_url = ?, tx_hash = ? WHERE id = ?`,
    );
    this.#updateCall = db.prepare(
      `UPDATE handoff_calls SET refusals = ?, reconcile_until_ms = ? WHERE id = ?`,
    );
    this.#closeCall = db.prepare(
      `UPDATE handoff_calls SET closed_ms = ? WHERE id = ? AND closed_ms IS NULL`,
    );
    this.#leaveCall = db.prepare(`UPDATE handoff_pieces SET call_id = NULL WHERE call_id = ?`);
    this.#openCalls = db.prepare(
      `SELECT ${CALL_COLUMNS} FROM handoff_calls WHERE kind = ? AND closed_ms IS NULL
       ORDER BY opened_ms, id`,
    );
    this.#piecesOfCall = db.prepare(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM} WHERE h.call_id = ? ORDER BY h.cid`,
    );
    this.#dataSet = db.prepare(
      `SELECT provider, client_data_set_id AS clientDataSetId, data_set_id AS dataSetId,
         call_id AS callId
       FROM handoff_data_sets WHERE provider = ?`,
    );
    this.#saveDataSet = db.prepare(
      `INSERT INTO handoff_data_sets (provider, client_data_set_id, data_set_id, call_id)
       VALUES (?, ?, ?, ?)
       ON CONFLICT (provider) DO UPDATE SET client_data_set_id = excluded.client_data_set_id,
         data_set_id = excluded.data_set_id, call_id = excluded.call_id`,
    );
    this.#counts = db.prepare(
      `SELECT state, COUNT(*) AS pieces, COALESCE(SUM(size), 0) AS bytes
       FROM handoff_pieces GROUP BY state`,
    );
    this.#oldestQueued = db.prepare(
      `SELECT MIN(queued_ms) AS at FROM handoff_pieces WHERE state = 'queued'`,
    );
  }

  async enqueue(
    input: { provider: string; now: number; cids?: readonly string[]; limit: number },
  ): Promise<number> {
    const result = this.#enqueue.run({
      provider: input.provider,
      at: input.now,
      now: toRfc3339(input.now),
      cids: input.cids ? JSON.stringify(input.cids) : null,
      limit: input.limit,
    });
    return Number(result.changes);
  }

  async get(cid: string): Promise<HandoffPiece | null> {
    return pieceOf(this.#get.get(cid));
  }

  async getMany(cids: readonly string[]): Promise<Map<string, HandoffPiece>> {
    const found = new Map<string, HandoffPiece>();
    for (const cid of cids) {
      const piece = pieceOf(this.#get.get(cid));
      if (piece) found.set(cid, piece);
    }
    return found;
  }

  async readyToPull(limit: number): Promise<HandoffPiece[]> {
    return piecesOf(this.#ready.all(limit));
  }

  async idle(state: HandoffState, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(this.#idle.all(state, limit));
  }

  async unkept(now: number, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(this.#unkept.all({ now: toRfc3339(now), limit }));
  }

  async inState(state: HandoffState, afterCid: string, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(this.#inState.all(state, afterCid, limit));
  }

  async move(cids: readonly string[], move: HandoffMove): Promise<number> {
    if (cids.length === 0) return 0;
    const sets = ["state = ?", "updated_ms = ?"];
    const values: (string | number | null)[] = [move.to, move.at];
    for (
      const [column, value] of [
        ["call_id", move.callId],
        ["data_set_id", move.dataSetId],
        ["piece_id", move.pieceId],
        ["tx_hash", move.txHash],
        ["error", move.error],
      ] as const
    ) {
      if (value === undefined) continue;
      sets.push(`${column} = ?`);
      values.push(value);
    }
    const states = move.from.map(() => "?").join(", ");
    const statement = this.#db.prepare(
      `UPDATE handoff_pieces SET ${sets.join(", ")} WHERE cid = ? AND state IN (${states})`,
    );
    return transaction(this.#db, () => {
      let moved = 0;
      for (const cid of cids) {
        moved += Number(statement.run(...values, cid, ...move.from).changes);
      }
      return moved;
    });
  }

  async openCall(
    call: HandoffCall,
    cids: readonly string[],
    pieceState: HandoffState,
  ): Promise<void> {
    transaction(this.#db, () => {
      this.#insertCall.run(
        call.id,
        call.provider,
        call.kind,
        call.body,
        call.statusUrl,
        call.txHash,
        call.refusals,
        call.reconcileUntil,
        call.openedAt,
      );
      for (const cid of cids) this.#intoCall.run(call.id, pieceState, call.openedAt, cid);
    });
  }

  async setCallStatus(id: string, statusUrl: string, txHash: string | null): Promise<void> {
    this.#setCallStatus.run(statusUrl, txHash, id);
  }

  async updateCall(
    id: string,
    update: { refusals: number; reconcileUntil: number | null },
  ): Promise<void> {
    this.#updateCall.run(update.refusals, update.reconcileUntil, id);
  }

  async closeCall(id: string, at: number): Promise<void> {
    transaction(this.#db, () => {
      this.#closeCall.run(at, id);
      this.#leaveCall.run(id);
    });
  }

  async openCalls(kind: HandoffCallKind): Promise<HandoffCall[]> {
    return (this.#openCalls.all(kind) as unknown as HandoffCall[]).map((row) => ({ ...row }));
  }

  async piecesOfCall(callId: string): Promise<HandoffPiece[]> {
    return piecesOf(this.#piecesOfCall.all(callId));
  }

  async dataSet(provider: string): Promise<HandoffDataSet | null> {
    const row = this.#dataSet.get(provider) as HandoffDataSet | undefined;
    return row ? { ...row } : null;
  }

  async saveDataSet(dataSet: HandoffDataSet): Promise<void> {
    this.#saveDataSet.run(
      dataSet.provider,
      dataSet.clientDataSetId,
      dataSet.dataSetId,
      dataSet.callId,
    );
  }

  async counts(): Promise<{ byState: HandoffCounts[]; oldestQueuedAt: number | null }> {
    const rows = this.#counts.all() as unknown as HandoffCounts[];
    const byState = HANDOFF_STATES.map((state) => {
      const row = rows.find((r) => r.state === state);
      return { state, pieces: Number(row?.pieces ?? 0), bytes: Number(row?.bytes ?? 0) };
    });
    const oldest = (this.#oldestQueued.get() as { at: number | null }).at;
    return { byState, oldestQueuedAt: oldest === null ? null : Number(oldest) };
  }
}

function pieceOf(row: unknown): HandoffPiece | null {
  return row ? { ...(row as HandoffPiece) } : null;
}

function piecesOf(rows: unknown[]): HandoffPiece[] {
  return rows.map((row) => ({ ...(row as HandoffPiece) }));
}
