// deno-lint-ignore-file require-await -- the interface is async for networked databases; node:sqlite answers at once, and `async` still turns a throw into a rejection.
/**
 * The lifecycle's tables in SQLite (see LifecycleRecords in
 * domain/lifecycle_records.ts for the rule and the three steps of a removal):
 * removed_pieces, manifest_pieces and the last sweep. Whether a piece may go
 * is one SQL condition (REMOVABLE), used by the sweep's pages, the backlog
 * and the removal's own re-check, so the three can never disagree.
 */
import type { StatementSync } from "node:sqlite";
import { MANIFEST_CONTENT_TYPE } from "../../kernel/manifest_format.ts";
import { transaction } from "./database.ts";
import type { Database } from "./database.ts";
import { ManifestListingStatements } from "./manifest_listing.ts";
import type {
  LifecycleRecords,
  RemovalMark,
  SweepPageRow,
  SweepRecord,
} from "../../domain/lifecycle_records.ts";

/** A deal `d` that still wants its piece: it had not ended by $endedBy. */
const LIVE_DEAL = "d.term_ends_at > $endedBy AND (d.deleted_at IS NULL OR d.deleted_at > $endedBy)";

/**
 * The piece `p` is stored, and no deal on it is live, nor a manifest's deal
 * listing it whose owner holds a deal on it too (one not deleted by the
 * cut-off): a manifest never keeps another's bytes, and a sponsored one
 * (no owner) keeps only itself; nor is a storage provider pulling it
 * (src/handoff/: it is reading it).
 */
const REMOVABLE = `NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
  AND NOT EXISTS (SELECT 1 FROM handoff_pieces h WHERE h.cid = p.cid AND h.state = 'pulling')
  AND EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid)
  AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid AND ${LIVE_DEAL})
  AND NOT EXISTS (SELECT 1 FROM manifest_pieces m JOIN deals d ON d.cid = m.manifest_cid
                  WHERE m.piece_cid = p.cid AND ${LIVE_DEAL}
                    AND EXISTS (SELECT 1 FROM deals o WHERE o.cid = p.cid
                                AND o.owner_sub = d.owner_sub
                                AND (o.deleted_at IS NULL OR o.deleted_at > $endedBy)))`;

export class SqliteLifecycleRecords implements LifecycleRecords {
  readonly #db: Database;
  readonly #sweepPage: StatementSync;
  readonly #beginRemoval: StatementSync;
  readonly #forgetBlocks: StatementSync;
  readonly #isPending: StatementSync;
  readonly #finishRemoval: StatementSync;
  readonly #unfinished: StatementSync;
  readonly #marksAfter: StatementSync;
  readonly #lastMark: StatementSync;
  readonly #backlog: StatementSync;
  readonly #isStored: StatementSync;
  readonly #unlistedManifests: StatementSync;
  readonly #lastSweep: StatementSync;
  readonly #recordSweep: StatementSync;
  readonly #listing: ManifestListingStatements;

  constructor(db: Database) {
    this.#db = db;
    // The page is cut first (an index walk), then judged: every page costs the same.
    this.#sweepPage = db.prepare(
      `WITH page AS (SELECT cid, size FROM pieces WHERE cid > $after ORDER BY cid LIMIT $limit)
       SELECT p.cid, p.size, (${REMOVABLE}) AS removable FROM page p ORDER BY p.cid`,
    );
    this.#beginRemoval = db.prepare(
      `INSERT INTO removed_pieces (cid, removing_at)
       SELECT p.cid, $at FROM pieces p WHERE p.cid = $cid AND ${REMOVABLE}
       RETURNING mark`,
    );
    this.#forgetBlocks = db.prepare(`DELETE FROM blocks WHERE piece_cid = ?`);
    this.#isPending = db.prepare(
      `SELECT 1 AS pending FROM removed_pieces WHERE mark = ? AND removed_at IS NULL`,
    );
    this.#finishRemoval = db.prepare(
      `UPDATE removed_pieces SET removed_at = ? WHERE mark = ? AND removed_at IS NULL`,
    );
    this.#unfinished = db.prepare(
      `SELECT mark, cid FROM removed_pieces WHERE removed_at IS NULL ORDER BY mark`,
    );
    this.#marksAfter = db.prepare(
      `SELECT mark, cid FROM removed_pieces WHERE mark > ? ORDER BY mark LIMIT 1000`,
    );
    this.#lastMark = db.prepare(`SELECT COALESCE(MAX(mark), 0) AS mark FROM removed_pieces`);
    this.#backlog = db.prepare(
      `SELECT COUNT(*) AS pieces, COALESCE(SUM(p.size), 0) AS bytes FROM pieces p
       WHERE ${REMOVABLE}`,
    );
    this.#isStored = db.prepare(
      `SELECT 1 AS stored FROM pieces p WHERE p.cid = ?
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)`,
    );
    // The literal type, not a parameter: it is what lets SQLite use the partial index.
    this.#unlistedManifests = db.prepare(
      `SELECT DISTINCT d.cid FROM deals d WHERE d.content_type = '${MANIFEST_CONTENT_TYPE}'
         AND NOT EXISTS (SELECT 1 FROM manifest_pieces m
                         WHERE m.manifest_cid = d.cid AND m.piece_cid = d.cid)
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = d.cid)
       ORDER BY d.cid LIMIT ?`,
    );
    this.#lastSweep = db.prepare(
      `SELECT started_at AS startedAt, finished_at AS finishedAt,
              removed_pieces AS removedPieces, removed_bytes AS removedBytes,
              removed_orphans AS removedOrphans
       FROM gc_sweeps WHERE id = 1`,
    );
    this.#recordSweep = db.prepare(
      `INSERT INTO gc_sweeps (id, started_at, finished_at, removed_pieces, removed_bytes,
                              removed_orphans)
       VALUES (1, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at,
         finished_at = excluded.finished_at, removed_pieces = excluded.removed_pieces,
         removed_bytes = excluded.removed_bytes, removed_orphans = excluded.removed_orphans`,
    );
    this.#listing = new ManifestListingStatements(db);
  }

  async sweepPage(afterCid: string, endedBy: string, limit: number): Promise<SweepPageRow[]> {
    const rows = this.#sweepPage.all({ after: afterCid, endedBy, limit }) as {
      cid: string;
      size: number;
      removable: number;
    }[];
    return rows.map((row) => ({
      cid: row.cid,
      size: Number(row.size),
      removable: Number(row.removable) === 1,
    }));
  }

  async beginRemovals(
    cids: readonly string[],
    endedBy: string,
    at: string,
  ): Promise<RemovalMark[]> {
    // One transaction, so one fsync for the batch: commits block the thread that serves.
    return transaction(this.#db, () =>
      cids.flatMap((cid) => {
        const row = this.#beginRemoval.get({ cid, endedBy, at }) as { mark: number } | undefined;
        if (row === undefined) return [];
        this.#forgetBlocks.run(cid);
        return [{ mark: Number(row.mark), cid }];
      }));
  }

  async isRemovalPending(mark: number): Promise<boolean> {
    return this.#isPending.get(mark) !== undefined;
  }

  async finishRemovals(marks: readonly number[], at: string): Promise<void> {
    if (marks.length === 0) return;
    transaction(this.#db, () => {
      for (const mark of marks) this.#finishRemoval.run(at, mark);
    });
  }

  async unfinishedRemovals(): Promise<RemovalMark[]> {
    return marksOf(this.#unfinished.all());
  }

  async removalMarksAfter(mark: number): Promise<RemovalMark[]> {
    return marksOf(this.#marksAfter.all(mark));
  }

  async lastRemovalMark(): Promise<number> {
    return Number((this.#lastMark.get() as { mark: number }).mark);
  }

  async removalBacklog(endedBy: string): Promise<{ pieces: number; bytes: number }> {
    const row = this.#backlog.get({ endedBy }) as { pieces: number; bytes: number };
    return { pieces: Number(row.pieces), bytes: Number(row.bytes) };
  }

  async storedAmong(cids: readonly string[]): Promise<string[]> {
    return cids.filter((cid) => this.#isStored.get(cid) !== undefined);
  }

  async unlistedManifests(limit: number): Promise<string[]> {
    return (this.#unlistedManifests.all(limit) as { cid: string }[]).map((row) => row.cid);
  }

  async recordManifestListing(manifestCid: string, pieceCids: readonly string[]): Promise<void> {
    transaction(this.#db, () => this.#listing.record(manifestCid, pieceCids));
  }

  async lastSweep(): Promise<SweepRecord | null> {
    const row = this.#lastSweep.get() as SweepRecord | undefined;
    if (row === undefined) return null;
    return {
      ...row,
      removedPieces: Number(row.removedPieces),
      removedBytes: Number(row.removedBytes),
      removedOrphans: Number(row.removedOrphans),
    };
  }

  async recordSweep(sweep: SweepRecord): Promise<void> {
    this.#recordSweep.run(
      sweep.startedAt,
      sweep.finishedAt,
      sweep.removedPieces,
      sweep.removedBytes,
      sweep.removedOrphans,
    );
  }
}

function marksOf(rows: unknown[]): RemovalMark[] {
  return (rows as RemovalMark[])
    .map((row) => ({ mark: Number(row.mark), cid: row.cid }));
}
