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
import type { Tier } from "../domain.ts";

export interface PieceRecord {
  cid: string;
  size: number;
  /** Null until the stored bytes have been hashed (uploads do not wait for it). */
  sha256: string | null;
  contentType: string;
  filename: string | null;
  createdAt: string;
}

export interface DealRecord {
  id: string;
  cid: string;
  tier: Tier;
  ownerSub: string | null;
  /** Who the deal belongs to as shown to people: an e-mail or an EIP-55 address. */
  ownerName: string | null;
  size: number;
  contentType: string;
  filename: string | null;
  termDays: number;
  createdAt: string;
  termEndsAt: string;
}

export interface UsageRecord {
  subject: string;
  day: string;
  bytes: number;
  uploads: number;
}

export interface RecordUploadInput {
  /** The piece to insert, or null when its bytes were already stored. */
  newPiece: PieceRecord | null;
  deal: DealRecord;
  usage: { subject: string; day: string; bytes: number };
}

export class CatalogRecords {
  readonly #db: Database;
  readonly #getPiece: StatementSync;
  readonly #insertPiece: StatementSync;
  readonly #setPieceSha256: StatementSync;
  readonly #piecesWithoutSha256: StatementSync;
  readonly #insertDeal: StatementSync;
  readonly #getUsage: StatementSync;
  readonly #addUsage: StatementSync;
  readonly #listDeals: StatementSync;
  readonly #listDealsAfter: StatementSync;
  readonly #getDeal: StatementSync;
  readonly #extendDeal: StatementSync;
  readonly #usageRange: StatementSync;

  constructor(db: Database) {
    this.#db = db;
    this.#getPiece = db.prepare(
      `SELECT cid, size, sha256, content_type AS contentType, filename, created_at AS createdAt
       FROM pieces WHERE cid = ?`,
    );
    this.#insertPiece = db.prepare(
      `INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.#setPieceSha256 = db.prepare(
      `UPDATE pieces SET sha256 = ? WHERE cid = ? AND sha256 IS NULL`,
    );
    this.#piecesWithoutSha256 = db.prepare(
      `SELECT cid FROM pieces WHERE sha256 IS NULL ORDER BY cid`,
    );
    this.#insertDeal = db.prepare(
      `INSERT INTO deals (id, cid, tier, owner_sub, owner, size, content_type, filename,
                          term_days, created_at, term_ends_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#getUsage = db.prepare(
      `SELECT subject, day, bytes, uploads FROM usage_daily WHERE subject = ? AND day = ?`,
    );
    this.#addUsage = db.prepare(
      `INSERT INTO usage_daily (subject, day, bytes, uploads) VALUES (?, ?, ?, 1)
       ON CONFLICT (subject, day) DO UPDATE
       SET bytes = bytes + excluded.bytes, uploads = uploads + 1`,
    );
    const dealColumns = `id, cid, tier, owner_sub AS ownerSub, owner AS ownerName, size,
      content_type AS contentType, filename, term_days AS termDays, created_at AS createdAt,
      term_ends_at AS termEndsAt`;
    // Deal ids are time-ordered and unique, so "id < cursor" pages newest-first without
    // duplicates or gaps while new uploads (with larger ids) keep arriving.
    this.#listDeals = db.prepare(
      `SELECT ${dealColumns} FROM deals WHERE owner_sub = ? ORDER BY id DESC LIMIT ?`,
    );
    this.#listDealsAfter = db.prepare(
      `SELECT ${dealColumns} FROM deals WHERE owner_sub = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    );
    this.#getDeal = db.prepare(`SELECT ${dealColumns} FROM deals WHERE id = ?`);
    this.#extendDeal = db.prepare(
      `UPDATE deals SET term_days = term_days + ?, term_ends_at = ? WHERE id = ?`,
    );
    this.#usageRange = db.prepare(
      `SELECT day, bytes, uploads FROM usage_daily
       WHERE subject = ? AND day >= ? AND day <= ? ORDER BY day`,
    );
  }

  /** A user's deals, newest first, strictly older than beforeId when given. */
  listDeals(ownerSub: string, options: { beforeId: string | null; limit: number }): DealRecord[] {
    const rows = options.beforeId === null
      ? this.#listDeals.all(ownerSub, options.limit)
      : this.#listDealsAfter.all(ownerSub, options.beforeId, options.limit);
    return rows as unknown as DealRecord[];
  }

  getDeal(id: string): DealRecord | null {
    return (this.#getDeal.get(id) as DealRecord | undefined) ?? null;
  }

  extendDeal(id: string, addDays: number, termEndsAt: string): void {
    this.#extendDeal.run(addDays, termEndsAt, id);
  }

  /** Usage rows of a subject between two days (inclusive); days without uploads are absent. */
  usageBetween(subject: string, from: string, to: string): UsageRecord[] {
    return (this.#usageRange.all(subject, from, to) as unknown as Omit<UsageRecord, "subject">[])
      .map((row) => ({
        subject,
        day: row.day,
        bytes: Number(row.bytes),
        uploads: Number(row.uploads),
      }));
  }

  getPiece(cid: string): PieceRecord | null {
    return (this.#getPiece.get(cid) as PieceRecord | undefined) ?? null;
  }

  /** Records a piece's digest once it is known; a digest already recorded is never replaced. */
  setPieceSha256(cid: string, sha256: string): void {
    this.#setPieceSha256.run(sha256, cid);
  }

  /** Cids of pieces whose digest is still unknown (after a restart, say). */
  piecesWithoutSha256(): string[] {
    return (this.#piecesWithoutSha256.all() as { cid: string }[]).map((row) => row.cid);
  }

  /** Bytes a subject has uploaded on a UTC day (0 when nothing). */
  usedBytes(subject: string, day: string): number {
    const row = this.#getUsage.get(subject, day) as UsageRecord | undefined;
    return row ? Number(row.bytes) : 0;
  }

  /** Inserts the piece (if new), the deal and the usage increment atomically. */
  recordUpload(input: RecordUploadInput): void {
    transaction(this.#db, () => {
      const p = input.newPiece;
      if (p) this.#insertPiece.run(p.cid, p.size, p.sha256, p.contentType, p.filename, p.createdAt);
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
      );
      this.#addUsage.run(input.usage.subject, input.usage.day, input.usage.bytes);
    });
  }
}
