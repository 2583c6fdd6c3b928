/**
 * The hand-off's records in PostgreSQL: the same rows and rules as
 * db/sqlite/handoff_records.ts (migration 7 here, 13 there, says what a row
 * is; domain/handoff_records.ts what each method promises), shared by every
 * instance (one of them hands off at a time: PostgresDatabase.handoffTurn).
 * Deal times are RFC 3339 text, compared bytewise (COLLATE "C") as SQLite
 * does; hand-off times are Unix milliseconds (BIGINT, parsed to numbers).
 */
import type { Row, Sql } from "./connection.ts";
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

const PIECE_COLUMNS = `h.cid, h.provider, h.state, h.size, p.piece_cid_v2 AS "pieceCidV2",
  h.data_set_id AS "dataSetId", h.piece_id AS "pieceId", h.tx_hash AS "txHash", h.error,
  h.call_id AS "callId", h.queued_ms AS "queuedAt", h.updated_ms AS "updatedAt"`;
const PIECES_FROM = `handoff_pieces h LEFT JOIN pieces p ON p.cid = h.cid`;

const CALL_COLUMNS = `id, provider, kind, body, status_url AS "statusUrl", tx_hash AS "txHash",
  refusals, reconcile_until_ms AS "reconcileUntil", opened_ms AS "openedAt"`;

/** A deal `d` that keeps its piece at `now` (a parameter): its term runs, its owner has not ended it. */
function keepingDeal(now: string): string {
  return `d.term_ends_at COLLATE "C" > ${now}
    AND (d.deleted_at IS NULL OR d.deleted_at COLLATE "C" > ${now})`;
}

/** Outside the provider's size limits: the piece stays here only. */
const INELIGIBLE_SIZE = `p.size < ${HANDOFF_MIN_BYTES} OR p.size > ${HANDOFF_MAX_BYTES}`;

export class PostgresHandoffRecords implements HandoffRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async enqueue(
    input: { provider: string; now: number; cids?: readonly string[]; limit: number },
  ): Promise<number> {
    // $4: the cids, or null for "any piece" (a scan). A row conflicts when it was removed
    // (any other excludes its piece): it is queued anew, as a new row would be. The
    // update's own condition leaves a row another instance queued meanwhile as it is
    // (SQLite has one writer; here only the hand-off turn keeps two enqueues apart).
    const result = await this.#sql.unsafe(
      `INSERT INTO handoff_pieces (cid, provider, state, size, error, queued_ms, updated_ms)
       SELECT p.cid, $1,
         CASE WHEN ${INELIGIBLE_SIZE} THEN 'ineligible' ELSE 'queued' END,
         p.size,
         CASE WHEN ${INELIGIBLE_SIZE} THEN '${INELIGIBLE_REASON}' END,
         $2::int8, $2::int8
       FROM pieces p
       WHERE ($4::text[] IS NULL OR p.cid = ANY($4::text[]))
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
         AND EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid AND ${keepingDeal("$3")})
         AND NOT EXISTS (SELECT 1 FROM handoff_pieces h WHERE h.cid = p.cid AND h.state <> 'removed')
       ORDER BY p.cid LIMIT $5
       ON CONFLICT (cid) DO UPDATE SET provider = excluded.provider, state = excluded.state,
         size = excluded.size, data_set_id = NULL, piece_id = NULL, tx_hash = NULL,
         error = excluded.error, call_id = NULL, queued_ms = excluded.queued_ms,
         updated_ms = excluded.updated_ms
       WHERE handoff_pieces.state = 'removed'`,
      [
        input.provider,
        input.now,
        toRfc3339(input.now),
        input.cids ? [...input.cids] : null,
        input.limit,
      ],
    );
    return result.count;
  }

  async get(cid: string): Promise<HandoffPiece | null> {
    const [row] = await this.#sql.unsafe(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM} WHERE h.cid = $1`,
      [cid],
    );
    return row ? pieceOf(row) : null;
  }

  async getMany(cids: readonly string[]): Promise<Map<string, HandoffPiece>> {
    const found = new Map<string, HandoffPiece>();
    if (cids.length === 0) return found;
    const rows = await this.#sql.unsafe(
      `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM} WHERE h.cid = ANY($1::text[])`,
      [[...cids]],
    );
    const byCid = new Map(rows.map((row) => [row.cid as string, row]));
    for (const cid of cids) {
      const row = byCid.get(cid);
      if (row) found.set(cid, pieceOf(row));
    }
    return found;
  }

  async readyToPull(limit: number): Promise<HandoffPiece[]> {
    return piecesOf(
      await this.#sql.unsafe(
        `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
         WHERE h.state = 'queued' AND h.call_id IS NULL AND p.piece_cid_v2 IS NOT NULL
         ORDER BY h.updated_ms, h.cid LIMIT $1`,
        [limit],
      ),
    );
  }

  async idle(state: HandoffState, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(
      await this.#sql.unsafe(
        `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
         WHERE h.state = $1 AND h.call_id IS NULL ORDER BY h.updated_ms, h.cid LIMIT $2`,
        [state, limit],
      ),
    );
  }

  async unkept(now: number, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(
      await this.#sql.unsafe(
        `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
         WHERE h.state = 'live' AND h.call_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = h.cid AND ${keepingDeal("$1")})
         ORDER BY h.updated_ms, h.cid LIMIT $2`,
        [toRfc3339(now), limit],
      ),
    );
  }

  async inState(state: HandoffState, afterCid: string, limit: number): Promise<HandoffPiece[]> {
    return piecesOf(
      await this.#sql.unsafe(
        `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM}
         WHERE h.state = $1 AND h.cid > $2 ORDER BY h.cid LIMIT $3`,
        [state, afterCid, limit],
      ),
    );
  }

  async move(cids: readonly string[], move: HandoffMove): Promise<number> {
    if (cids.length === 0) return 0;
    const values: unknown[] = [move.to, move.at];
    const sets = ["state = $1", "updated_ms = $2"];
    for (
      const [column, value, type] of [
        ["call_id", move.callId, "text"],
        ["data_set_id", move.dataSetId, "int8"],
        ["piece_id", move.pieceId, "int8"],
        ["tx_hash", move.txHash, "text"],
        ["error", move.error, "text"],
      ] as const
    ) {
      if (value === undefined) continue;
      values.push(value);
      sets.push(`${column} = $${values.length}::${type}`);
    }
    values.push([...cids], [...move.from]);
    const n = values.length;
    // One statement: every piece moves, or none does (SQLite: one transaction).
    const result = await this.#sql.unsafe(
      `UPDATE handoff_pieces SET ${sets.join(", ")}
       WHERE cid = ANY($${n - 1}::text[]) AND state = ANY($${n}::text[])`,
      values,
    );
    return result.count;
  }

  async openCall(
    call: HandoffCall,
    cids: readonly string[],
    pieceState: HandoffState,
  ): Promise<void> {
    await this.#sql.begin(async (tx) => {
      await tx`INSERT INTO handoff_calls (id, provider, kind, body, status_url, tx_hash, refusals,
          reconcile_until_ms, opened_ms)
        VALUES (${call.id}, ${call.provider}, ${call.kind}, ${call.body}, ${call.statusUrl},
          ${call.txHash}, ${call.refusals}, ${call.reconcileUntil}, ${call.openedAt})`;
      if (cids.length === 0) return;
      await tx.unsafe(
        `UPDATE handoff_pieces SET call_id = $1, state = $2, updated_ms = $3
         WHERE cid = ANY($4::text[])`,
        [call.id, pieceState, call.openedAt, [...cids]],
      );
    });
  }

  async setCallStatus(id: string, statusUrl: string, txHash: string | null): Promise<void> {
    await this.#sql`UPDATE handoff_calls SET status_url = ${statusUrl}, tx_hash = ${txHash}
      WHERE id = ${id}`;
  }

  async updateCall(
    id: string,
    update: { refusals: number; reconcileUntil: number | null },
  ): Promise<void> {
    await this.#sql`UPDATE handoff_calls SET refusals = ${update.refusals},
      reconcile_until_ms = ${update.reconcileUntil} WHERE id = ${id}`;
  }

  async closeCall(id: string, at: number): Promise<void> {
    await this.#sql.begin(async (tx) => {
      await tx`UPDATE handoff_calls SET closed_ms = ${at} WHERE id = ${id} AND closed_ms IS NULL`;
      await tx`UPDATE handoff_pieces SET call_id = NULL WHERE call_id = ${id}`;
    });
  }

  async openCalls(kind: HandoffCallKind): Promise<HandoffCall[]> {
    const rows = await this.#sql.unsafe(
      `SELECT ${CALL_COLUMNS} FROM handoff_calls WHERE kind = $1 AND closed_ms IS NULL
       ORDER BY opened_ms, id`,
      [kind],
    );
    return rows.map((row) => ({
      id: row.id as string,
      provider: row.provider as string,
      kind: row.kind as HandoffCallKind,
      body: row.body as string,
      statusUrl: row.statusUrl as string | null,
      txHash: row.txHash as string | null,
      refusals: Number(row.refusals),
      reconcileUntil: numberOrNull(row.reconcileUntil),
      openedAt: Number(row.openedAt),
    }));
  }

  async piecesOfCall(callId: string): Promise<HandoffPiece[]> {
    return piecesOf(
      await this.#sql.unsafe(
        `SELECT ${PIECE_COLUMNS} FROM ${PIECES_FROM} WHERE h.call_id = $1 ORDER BY h.cid`,
        [callId],
      ),
    );
  }

  async dataSet(provider: string): Promise<HandoffDataSet | null> {
    const [row] = await this.#sql`SELECT provider, client_data_set_id AS "clientDataSetId",
        data_set_id AS "dataSetId", call_id AS "callId"
      FROM handoff_data_sets WHERE provider = ${provider}`;
    if (!row) return null;
    return {
      provider: row.provider as string,
      clientDataSetId: row.clientDataSetId as string,
      dataSetId: numberOrNull(row.dataSetId),
      callId: row.callId as string | null,
    };
  }

  async saveDataSet(dataSet: HandoffDataSet): Promise<void> {
    await this.#sql`INSERT INTO handoff_data_sets (provider, client_data_set_id, data_set_id,
        call_id)
      VALUES (${dataSet.provider}, ${dataSet.clientDataSetId}, ${dataSet.dataSetId},
        ${dataSet.callId})
      ON CONFLICT (provider) DO UPDATE SET client_data_set_id = excluded.client_data_set_id,
        data_set_id = excluded.data_set_id, call_id = excluded.call_id`;
  }

  async counts(): Promise<{ byState: HandoffCounts[]; oldestQueuedAt: number | null }> {
    const rows = await this.#sql`SELECT state, COUNT(*)::int8 AS pieces,
        COALESCE(SUM(size), 0)::int8 AS bytes
      FROM handoff_pieces GROUP BY state`;
    const byState = HANDOFF_STATES.map((state) => {
      const row = rows.find((r) => r.state === state);
      return { state, pieces: Number(row?.pieces ?? 0), bytes: Number(row?.bytes ?? 0) };
    });
    const [oldest] = await this.#sql`SELECT MIN(queued_ms) AS at FROM handoff_pieces
      WHERE state = 'queued'`;
    return { byState, oldestQueuedAt: numberOrNull(oldest?.at) };
  }
}

function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function pieceOf(row: Row): HandoffPiece {
  return {
    cid: row.cid as string,
    provider: row.provider as string,
    state: row.state as HandoffState,
    size: Number(row.size),
    pieceCidV2: (row.pieceCidV2 as string | null) ?? null,
    dataSetId: numberOrNull(row.dataSetId),
    pieceId: numberOrNull(row.pieceId),
    txHash: row.txHash as string | null,
    error: row.error as string | null,
    callId: row.callId as string | null,
    queuedAt: Number(row.queuedAt),
    updatedAt: Number(row.updatedAt),
  };
}

function piecesOf(rows: readonly Row[]): HandoffPiece[] {
  return rows.map(pieceOf);
}
