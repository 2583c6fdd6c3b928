/**
 * The lifecycle's tables in PostgreSQL: the same records and rules as
 * db/sqlite/lifecycle_records.ts (see there, and LifecycleRecords in
 * domain/lifecycle_records.ts), shared by every instance. Whether a piece may
 * go is one SQL condition (removable) for the sweep's pages, the backlog and
 * the removal's own re-check. Timestamps are RFC 3339 text, compared bytewise
 * (COLLATE "C"), whatever the server's locale.
 */
import { MANIFEST_CONTENT_TYPE } from "../../kernel/manifest_format.ts";
import type { Sql } from "./connection.ts";
import type {
  LifecycleRecords,
  RemovalMark,
  SweepPageRow,
  SweepRecord,
} from "../../domain/lifecycle_records.ts";

/**
 * The piece `p` is stored, and no deal on it still wants it (had not ended
 * by the cut-off, the parameter `endedBy`, "$2"), nor a manifest's deal
 * listing it whose owner holds a deal on it too (db/sqlite/lifecycle_records.ts
 * says why); nor is a storage provider pulling it (its hand-off is 'pulling').
 */
function removable(endedBy: string): string {
  const live = `d.term_ends_at COLLATE "C" > ${endedBy}
    AND (d.deleted_at IS NULL OR d.deleted_at COLLATE "C" > ${endedBy})`;
  return `NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
    AND EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid)
    AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid AND ${live})
    AND NOT EXISTS (SELECT 1 FROM manifest_pieces m JOIN deals d ON d.cid = m.manifest_cid
                    WHERE m.piece_cid = p.cid AND ${live}
                      AND EXISTS (SELECT 1 FROM deals o WHERE o.cid = p.cid
                                  AND o.owner_sub = d.owner_sub
                                  AND (o.deleted_at IS NULL
                                    OR o.deleted_at COLLATE "C" > ${endedBy})))
    AND NOT EXISTS (SELECT 1 FROM handoff_pieces h WHERE h.cid = p.cid AND h.state = 'pulling')`;
}

const SWEEP_COLUMNS = `started_at AS "startedAt", finished_at AS "finishedAt",
  removed_pieces AS "removedPieces", removed_bytes AS "removedBytes",
  removed_orphans AS "removedOrphans"`;

export class PostgresLifecycleRecords implements LifecycleRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async sweepPage(afterCid: string, endedBy: string, limit: number): Promise<SweepPageRow[]> {
    // The page is cut first (an index walk), then judged: every page costs the same.
    const rows = await this.#sql.unsafe(
      `WITH page AS (SELECT cid, size FROM pieces WHERE cid > $1 ORDER BY cid LIMIT $3)
       SELECT p.cid, p.size, (${removable("$2")}) AS removable FROM page p ORDER BY p.cid`,
      [afterCid, endedBy, limit],
    );
    return rows.map((row) => ({
      cid: row.cid as string,
      size: Number(row.size),
      removable: row.removable === true,
    }));
  }

  async beginRemovals(
    cids: readonly string[],
    endedBy: string,
    at: string,
  ): Promise<RemovalMark[]> {
    if (cids.length === 0) return [];
    // One statement, so one round trip for the batch. Its snapshot is taken now, after the
    // caller holds the cids' locks: a deal made by an upload that held one before is seen.
    // The marked pieces' indexed blocks go in the same statement (a block lives while its
    // piece does).
    const rows = await this.#sql.unsafe(
      `WITH marked AS (
         INSERT INTO removed_pieces (cid, removing_at)
         SELECT p.cid, $3 FROM pieces p WHERE p.cid = ANY($1::text[]) AND ${removable("$2")}
         ORDER BY p.cid
         ON CONFLICT (cid) DO NOTHING
         RETURNING mark, cid
       ), forgotten AS (
         DELETE FROM blocks WHERE piece_cid IN (SELECT cid FROM marked)
       )
       SELECT mark, cid FROM marked`,
      [cids, endedBy, at],
    );
    return marksOf(rows).sort((a, b) => a.mark - b.mark);
  }

  async isRemovalPending(mark: number): Promise<boolean> {
    const rows = await this.#sql.unsafe(
      `SELECT 1 FROM removed_pieces WHERE mark = $1 AND removed_at IS NULL`,
      [mark],
    );
    return rows.length > 0;
  }

  async finishRemovals(marks: readonly number[], at: string): Promise<void> {
    if (marks.length === 0) return;
    await this.#sql.unsafe(
      `UPDATE removed_pieces SET removed_at = $1
       WHERE mark = ANY($2::bigint[]) AND removed_at IS NULL`,
      [at, marks],
    );
  }

  async unfinishedRemovals(): Promise<RemovalMark[]> {
    return marksOf(
      await this.#sql.unsafe(
        `SELECT mark, cid FROM removed_pieces WHERE removed_at IS NULL ORDER BY mark`,
      ),
    );
  }

  async removalMarksAfter(mark: number): Promise<RemovalMark[]> {
    return marksOf(
      await this.#sql.unsafe(
        `SELECT mark, cid FROM removed_pieces WHERE mark > $1 ORDER BY mark LIMIT 1000`,
        [mark],
      ),
    );
  }

  async lastRemovalMark(): Promise<number> {
    const [row] = await this.#sql.unsafe(
      `SELECT COALESCE(MAX(mark), 0) AS mark FROM removed_pieces`,
    );
    return Number(row.mark);
  }

  async storedAmong(cids: readonly string[]): Promise<string[]> {
    if (cids.length === 0) return [];
    const rows = await this.#sql.unsafe(
      `SELECT p.cid FROM pieces p WHERE p.cid = ANY($1::text[])
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)`,
      [cids],
    );
    const stored = new Set(rows.map((row) => row.cid as string));
    return cids.filter((cid) => stored.has(cid));
  }

  async removalBacklog(endedBy: string): Promise<{ pieces: number; bytes: number }> {
    const [row] = await this.#sql.unsafe(
      `SELECT COUNT(*)::int8 AS pieces, COALESCE(SUM(p.size), 0)::int8 AS bytes
       FROM pieces p WHERE ${removable("$1")}`,
      [endedBy],
    );
    return { pieces: Number(row.pieces), bytes: Number(row.bytes) };
  }

  async unlistedManifests(limit: number): Promise<string[]> {
    // The literal type, not a parameter: it is what lets the planner use the partial index.
    const rows = await this.#sql.unsafe(
      `SELECT DISTINCT d.cid FROM deals d WHERE d.content_type = '${MANIFEST_CONTENT_TYPE}'
         AND NOT EXISTS (SELECT 1 FROM manifest_pieces m
                         WHERE m.manifest_cid = d.cid AND m.piece_cid = d.cid)
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = d.cid)
       ORDER BY d.cid LIMIT $1`,
      [limit],
    );
    return rows.map((row) => row.cid as string);
  }

  async recordManifestListing(manifestCid: string, pieceCids: readonly string[]): Promise<void> {
    await recordListing(this.#sql, manifestCid, pieceCids);
  }

  async lastSweep(): Promise<SweepRecord | null> {
    const [row] = await this.#sql.unsafe(`SELECT ${SWEEP_COLUMNS} FROM gc_sweeps WHERE id = 1`);
    if (!row) return null;
    return {
      startedAt: row.startedAt as string,
      finishedAt: row.finishedAt as string,
      removedPieces: Number(row.removedPieces),
      removedBytes: Number(row.removedBytes),
      removedOrphans: Number(row.removedOrphans),
    };
  }

  async recordSweep(sweep: SweepRecord): Promise<void> {
    await this.#sql.unsafe(
      `INSERT INTO gc_sweeps (id, started_at, finished_at, removed_pieces, removed_bytes,
                              removed_orphans)
       VALUES (1, $1, $2, $3, $4, $5)
       ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at,
         finished_at = excluded.finished_at, removed_pieces = excluded.removed_pieces,
         removed_bytes = excluded.removed_bytes, removed_orphans = excluded.removed_orphans`,
      [
        sweep.startedAt,
        sweep.finishedAt,
        sweep.removedPieces,
        sweep.removedBytes,
        sweep.removedOrphans,
      ],
    );
  }
}

/**
 * What a manifest lists, with the manifest itself (which marks it as read):
 * in the caller's transaction (an upload's, with its deal) or on its own.
 */
export async function recordListing(
  sql: Pick<Sql, "unsafe">,
  manifestCid: string,
  pieceCids: readonly string[],
): Promise<void> {
  await sql.unsafe(
    `INSERT INTO manifest_pieces (manifest_cid, piece_cid)
     SELECT $1, listed FROM unnest($2::text[]) AS listed
     ON CONFLICT DO NOTHING`,
    [manifestCid, [manifestCid, ...pieceCids]],
  );
}

function marksOf(rows: readonly Record<string, unknown>[]): RemovalMark[] {
  return rows.map((row) => ({ mark: Number(row.mark), cid: row.cid as string }));
}
