// deno-lint-ignore-file require-await -- the interface is async for networked databases; node:sqlite answers at once, and `async` still turns a throw into a rejection.
/**
 * The catalog's tables: pieces (what is stored), deals (who stored what, for
 * how long) and daily usage counters. Typed access, statements prepared once
 * per database.
 * Every write that counts an upload goes through `recordUpload`, so the deal
 * and the counters that count it change in one transaction.
 */
import type { StatementSync } from "node:sqlite";
import { transaction } from "./database.ts";
import type { Database } from "./database.ts";
import { SqliteBlockRecords } from "./block_records.ts";
import { ResumableUploadMovedError } from "../../domain/catalog_records.ts";
import type {
  CatalogRecords,
  DealFilter,
  DealRecord,
  ListDealsOptions,
  PieceRecord,
  RecordUploadInput,
  RemovalMarkOf,
  UsageRecord,
  WithdrawDealInput,
} from "../../domain/catalog_records.ts";
import { ManifestListingStatements } from "./manifest_listing.ts";
import { PieceCidStatements } from "./piece_cids.ts";
import { DealWithdrawalStatements } from "./deal_withdrawal.ts";
import { pieceCidsOf } from "../piece_cid_columns.ts";

export class SqliteCatalogRecords implements CatalogRecords {
  readonly #db: Database;
  readonly #getPiece: StatementSync;
  readonly #insertPiece: StatementSync;
  readonly #setPieceSha256: StatementSync;
  readonly #piecesWithoutSha256: StatementSync;
  readonly #piecesAfter: StatementSync;
  readonly #markPieceCorrupt: StatementSync;
  readonly #clearPieceCorrupt: StatementSync;
  readonly #corruptPieceCids: StatementSync;
  readonly #corruptMarksAfter: StatementSync;
  readonly #repairPiece: StatementSync;
  readonly #unmarkPiece: StatementSync;
  readonly #insertDeal: StatementSync;
  readonly #getUsage: StatementSync;
  readonly #storedTotals: StatementSync;
  readonly #addUsage: StatementSync;
  /** listDeals' statements: with or without a cursor, a state, a cid. */
  readonly #listDeals = new Map<string, StatementSync>();
  readonly #getDeal: StatementSync;
  readonly #extendDeal: StatementSync;
  readonly #deleteDeal: StatementSync;
  readonly #withdraw: DealWithdrawalStatements;
  readonly #usageRange: StatementSync;
  readonly #blocks: SqliteBlockRecords;
  readonly #finishResumable: StatementSync;
  readonly #revivePiece: StatementSync;
  readonly #unmarkRemoved: StatementSync;
  readonly #listing: ManifestListingStatements;
  readonly #pieceCids: PieceCidStatements;

  constructor(db: Database, blocks: SqliteBlockRecords = new SqliteBlockRecords(db)) {
    this.#db = db;
    this.#blocks = blocks;
    const pieceColumns = `p.cid, p.size, p.sha256, p.content_type AS contentType, p.filename,
      p.created_at AS createdAt, c.marked_at AS corruptAt, r.removing_at AS removedAt,
      p.piece_cid_v2 AS pieceCidV2
      FROM pieces p LEFT JOIN corrupt_pieces c ON c.cid = p.cid
      LEFT JOIN removed_pieces r ON r.cid = p.cid`;
    this.#getPiece = db.prepare(`SELECT ${pieceColumns} WHERE p.cid = ?`);
    this.#insertPiece = db.prepare(
      `INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at,
                           piece_cid_v2, piece_cid_v1)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#setPieceSha256 = db.prepare(
      `UPDATE pieces SET sha256 = ? WHERE cid = ? AND sha256 IS NULL`,
    );
    this.#piecesWithoutSha256 = db.prepare(
      `SELECT cid FROM pieces WHERE sha256 IS NULL ORDER BY cid`,
    );
    this.#piecesAfter = db.prepare(
      `SELECT ${pieceColumns} WHERE p.cid > ? ORDER BY p.cid LIMIT ?`,
    );
    // Marks change only from the state the scrub saw, so a repair in between is never undone.
    this.#markPieceCorrupt = db.prepare(
      `INSERT INTO corrupt_pieces (cid, marked_at, problem) VALUES (?, ?, ?)
       ON CONFLICT (cid) DO NOTHING`,
    );
    this.#clearPieceCorrupt = db.prepare(
      `DELETE FROM corrupt_pieces WHERE cid = ? AND marked_at = ?`,
    );
    this.#corruptPieceCids = db.prepare(`SELECT cid FROM corrupt_pieces ORDER BY cid`);
    this.#corruptMarksAfter = db.prepare(
      `SELECT mark, cid FROM corrupt_pieces WHERE mark > ? ORDER BY mark LIMIT 1000`,
    );
    this.#repairPiece = db.prepare(`UPDATE pieces SET sha256 = ? WHERE cid = ?`);
    this.#unmarkPiece = db.prepare(`DELETE FROM corrupt_pieces WHERE cid = ?`);
    this.#insertDeal = db.prepare(
      `INSERT INTO deals (id, cid, tier, owner_sub, owner, size, content_type, filename,
                          term_days, created_at, term_ends_at, deleted_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#getUsage = db.prepare(
      `SELECT subject, day, bytes, uploads FROM usage_daily WHERE subject = ? AND day = ?`,
    );
    this.#storedTotals = db.prepare(
      `SELECT COUNT(*) AS pieces, COALESCE(SUM(size), 0) AS bytes FROM pieces p
       WHERE NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)`,
    );
    this.#addUsage = db.prepare(
      `INSERT INTO usage_daily (subject, day, bytes, uploads) VALUES (?, ?, ?, 1)
       ON CONFLICT (subject, day) DO UPDATE
       SET bytes = bytes + excluded.bytes, uploads = uploads + 1`,
    );
    this.#getDeal = db.prepare(`SELECT ${DEAL_COLUMNS} FROM deals WHERE id = ?`);
    this.#extendDeal = db.prepare(
      `UPDATE deals SET term_days = term_days + ?, term_ends_at = ? WHERE id = ?`,
    );
    this.#deleteDeal = db.prepare(
      `UPDATE deals SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`,
    );
    this.#withdraw = new DealWithdrawalStatements(db);
    this.#revivePiece = db.prepare(
      `UPDATE pieces SET size = ?, sha256 = ?, content_type = ?, filename = ?, created_at = ?,
         piece_cid_v2 = ?, piece_cid_v1 = ? WHERE cid = ?`,
    );
    this.#unmarkRemoved = db.prepare(`DELETE FROM removed_pieces WHERE cid = ?`);
    this.#listing = new ManifestListingStatements(db);
    this.#pieceCids = new PieceCidStatements(db, pieceColumns);
    this.#finishResumable = db.prepare(
      `UPDATE resumable_uploads SET received = length, staging = 'null', deal_id = ?,
         expires_ms = ?, roots = ? WHERE id = ? AND received = ? AND deal_id IS NULL`,
    );
    this.#usageRange = db.prepare(
      `SELECT day, bytes, uploads FROM usage_daily
       WHERE subject = ? AND day >= ? AND day <= ? ORDER BY day`,
    );
  }

  /** A user's deals (on one cid, when given), newest first, strictly older than beforeId when given. */
  async listDeals(ownerSub: string, options: ListDealsOptions): Promise<DealRecord[]> {
    const filter = options.filter ?? null;
    const cid = options.cid ?? null;
    const text = listDealsQuery({
      after: options.beforeId !== null,
      state: filter?.state,
      cid: cid !== null,
    });
    let statement = this.#listDeals.get(text);
    if (statement === undefined) this.#listDeals.set(text, statement = this.#db.prepare(text));
    // node:sqlite refuses a named value the statement does not use.
    const params: Record<string, string | number> = { owner: ownerSub, limit: options.limit };
    if (options.beforeId !== null) params.before = options.beforeId;
    if (cid !== null) params.cid = cid;
    if (filter !== null && text.includes("$now")) params.now = filter.now;
    const rows = statement.all(params);
    return rows as unknown as DealRecord[];
  }

  async getDeal(id: string): Promise<DealRecord | null> {
    return (this.#getDeal.get(id) as DealRecord | undefined) ?? null;
  }

  async extendDeal(id: string, addDays: number, termEndsAt: string): Promise<void> {
    this.#extendDeal.run(addDays, termEndsAt, id);
  }

  async withdrawDeal(input: WithdrawDealInput): Promise<RemovalMarkOf | null> {
    return this.#withdraw.withdraw(input);
  }

  async deleteDeal(id: string, at: string): Promise<void> {
    this.#deleteDeal.run(at, id);
  }

  /** Usage rows of a subject between two days (inclusive); days without uploads are absent. */
  async usageBetween(subject: string, from: string, to: string): Promise<UsageRecord[]> {
    return (this.#usageRange.all(subject, from, to) as unknown as Omit<UsageRecord, "subject">[])
      .map((row) => ({
        subject,
        day: row.day,
        bytes: Number(row.bytes),
        uploads: Number(row.uploads),
      }));
  }

  async getPiece(cid: string): Promise<PieceRecord | null> {
    return (this.#getPiece.get(cid) as PieceRecord | undefined) ?? null;
  }

  /** Records a piece's digest once it is known; a digest already recorded is never replaced. */
  async setPieceSha256(cid: string, sha256: string): Promise<void> {
    this.#setPieceSha256.run(sha256, cid);
  }

  /** Cids of pieces whose digest is still unknown (after a restart, say). */
  async piecesWithoutSha256(): Promise<string[]> {
    return (this.#piecesWithoutSha256.all() as { cid: string }[]).map((row) => row.cid);
  }

  async setPieceCidV2(cid: string, pieceCidV2: string): Promise<void> {
    this.#pieceCids.set(cid, pieceCidV2);
  }

  async piecesWithoutPieceCidV2(): Promise<string[]> {
    return this.#pieceCids.unknown();
  }

  async findPieceByPieceCid(pieceCid: string): Promise<PieceRecord | null> {
    return this.#pieceCids.find(pieceCid);
  }

  /** Up to `limit` pieces with cids after `afterCid`, in cid order: a scrub's pages. */
  async piecesAfter(afterCid: string, limit: number): Promise<PieceRecord[]> {
    return this.#piecesAfter.all(afterCid, limit) as unknown as PieceRecord[];
  }

  /** Marks a piece's bytes as failing verification; false if it was marked already. */
  async markPieceCorrupt(cid: string, at: string, problem: string): Promise<boolean> {
    return Number(this.#markPieceCorrupt.run(cid, at, problem).changes) === 1;
  }

  /** Clears the mark set at `markedAt` (bytes verify again); false if it changed meanwhile. */
  async clearPieceCorrupt(cid: string, markedAt: string): Promise<boolean> {
    return Number(this.#clearPieceCorrupt.run(cid, markedAt).changes) === 1;
  }

  /**
   * Marks made after `mark` (a row id from an earlier answer; 0 for all), oldest
   * first, at most 1000: a poller reads only what is new, however many there are.
   */
  async corruptMarksAfter(mark: number): Promise<{ mark: number; cid: string }[]> {
    return (this.#corruptMarksAfter.all(mark) as { mark: number; cid: string }[])
      .map((row) => ({ mark: Number(row.mark), cid: row.cid }));
  }

  async corruptPieceCids(): Promise<string[]> {
    return (this.#corruptPieceCids.all() as { cid: string }[]).map((row) => row.cid);
  }

  /**
   * How many pieces are stored and their bytes: a scan of the pieces table,
   * for the metrics gauges (which cache it).
   */
  async storedTotals(): Promise<{ pieces: number; bytes: number }> {
    const row = this.#storedTotals.get() as { pieces: number; bytes: number };
    return { pieces: Number(row.pieces), bytes: Number(row.bytes) };
  }

  async usedBytes(subject: string, day: string): Promise<number> {
    return this.usedBytesNow(subject, day);
  }

  /**
   * usedBytes, answered synchronously: the in-memory cap ledger checks and
   * reserves in one synchronous step, which is what makes it exact.
   */
  usedBytesNow(subject: string, day: string): number {
    const row = this.#getUsage.get(subject, day) as UsageRecord | undefined;
    return row ? Number(row.bytes) : 0;
  }

  /** Inserts the piece (if new), the deal and the usage increment atomically. */
  async recordUpload(input: RecordUploadInput): Promise<void> {
    // A CAR's blocks first, in slices: invisible until the piece's row commits below.
    const blocksOf = input.blocks ? input.deal.cid : null;
    if (blocksOf !== null) await this.#blocks.indexBlocks(blocksOf, input.blocks!);
    else if (input.newPiece) await this.#blocks.forgetUnstored(input.newPiece.cid);
    try {
      this.#recordUploadNow(input);
    } catch (error) {
      if (blocksOf !== null) await this.#blocks.forgetUnstored(blocksOf);
      throw error;
    }
    // In the commit's synchronous step: no request sees the bytes both used and reserved.
    input.reservation?.markSettled();
  }

  #recordUploadNow(input: RecordUploadInput): void {
    transaction(this.#db, () => {
      const p = input.newPiece;
      if (p) {
        const [v2, v1] = pieceCidsOf(p);
        this.#insertPiece.run(
          p.cid,
          p.size,
          p.sha256,
          p.contentType,
          p.filename,
          p.createdAt,
          v2,
          v1,
        );
      }
      const revived = input.revivedPiece;
      if (revived) {
        const r = revived;
        const [v2, v1] = pieceCidsOf(r);
        this.#revivePiece.run(
          r.size,
          r.sha256,
          r.contentType,
          r.filename,
          r.createdAt,
          v2,
          v1,
          r.cid,
        );
        this.#unmarkRemoved.run(r.cid);
        this.#unmarkPiece.run(r.cid);
        this.#listing.forget(r.cid);
      }
      if (input.manifestListing) this.#listing.record(input.deal.cid, input.manifestListing);
      const repaired = input.repairedPiece;
      if (repaired) {
        this.#repairPiece.run(repaired.sha256, repaired.cid);
        this.#unmarkPiece.run(repaired.cid);
      }
      const d = input.deal;
      this.#insertDeal.run(
        d.id,
        d.cid,
        d.tier,
        d.ownerSub,
        d.ownerName,
        d.size,
        d.contentType,
        d.filename,
        d.termDays,
        d.createdAt,
        d.termEndsAt,
        d.deletedAt,
      );
      this.#addUsage.run(input.usage.subject, input.usage.day, input.usage.bytes);
      const finished = input.finishesResumable;
      if (finished && this.#markFinished(d.id, finished) !== 1) {
        throw new ResumableUploadMovedError(finished.id);
      }
    });
  }

  /** Marks a resumable upload finished with its deal; 1 if it was still where it was read. */
  #markFinished(
    dealId: string,
    finished: NonNullable<RecordUploadInput["finishesResumable"]>,
  ): number {
    const roots = finished.roots === null ? null : JSON.stringify(finished.roots);
    const result = this.#finishResumable.run(
      dealId,
      finished.expiresMs,
      roots,
      finished.id,
      finished.fromBytes,
    );
    return Number(result.changes);
  }
}

const DEAL_COLUMNS = `id, cid, tier, owner_sub AS ownerSub, owner AS ownerName, size,
  content_type AS contentType, filename, term_days AS termDays, created_at AS createdAt,
  term_ends_at AS termEndsAt, deleted_at AS deletedAt`;

/** Each state as a condition on a deal's row at the instant $now (kernel/wire.ts: DealState). */
const STATE_CONDITIONS: Record<DealFilter["state"], string> = {
  active: "deleted_at IS NULL AND term_ends_at > $now",
  expired: "deleted_at IS NULL AND term_ends_at <= $now",
  deleted: "deleted_at IS NOT NULL",
};

/**
 * A page of a user's deals. Deal ids are time-ordered and unique, so "id <
 * cursor" pages newest-first without duplicates or gaps while new uploads
 * (with larger ids) keep arriving; a state filter only skips rows of the walk.
 */
function listDealsQuery(
  options: { after: boolean; state?: DealFilter["state"]; cid: boolean },
): string {
  const conditions = ["owner_sub = $owner"];
  if (options.after) conditions.push("id < $before");
  if (options.cid) conditions.push("cid = $cid");
  if (options.state) conditions.push(STATE_CONDITIONS[options.state]);
  return `SELECT ${DEAL_COLUMNS} FROM deals WHERE ${conditions.join(" AND ")}
    ORDER BY id DESC LIMIT $limit`;
}
