/**
 * The catalog's tables in PostgreSQL: the same records and rules as
 * db/sqlite/catalog_records.ts (see there), shared by every instance.
 * `recordUpload` is one transaction, as in SQLite: a deal never exists
 * without its piece row and its usage increment.
 */
import type { Sql } from "./connection.ts";
import { indexBlocks } from "./block_records.ts";
import { ResumableUploadMovedError } from "../../domain/catalog_records.ts";
import type * as Records from "../../domain/catalog_records.ts";
import { recordListing } from "./lifecycle_records.ts";
import { pieceCidsOf, SERVABLE_FIRST } from "../piece_cid_columns.ts";

/**
 * A PieceRecord's columns with its corrupt mark and removal, FROM the joins
 * (row_copy.ts reads it too).
 */
export const PIECE_COLUMNS = `p.cid, p.size, p.sha256, p.content_type AS "contentType", p.filename,
  p.created_at AS "createdAt", c.marked_at AS "corruptAt", r.removing_at AS "removedAt",
  p.piece_cid_v2 AS "pieceCidV2"
  FROM pieces p LEFT JOIN corrupt_pieces c ON c.cid = p.cid
  LEFT JOIN removed_pieces r ON r.cid = p.cid`;

const DEAL_COLUMNS = `id, cid, tier, owner_sub AS "ownerSub", owner AS "ownerName", size,
  content_type AS "contentType", filename, term_days AS "termDays", created_at AS "createdAt",
  term_ends_at AS "termEndsAt", deleted_at AS "deletedAt"`;

/** The states that depend on an instant, as a condition on a deal's row at `now` (a parameter). */
const STATE_CONDITIONS: Record<"active" | "expired", (now: string) => string> = {
  active: (now) => `deleted_at IS NULL AND term_ends_at COLLATE "C" > ${now}`,
  expired: (now) => `deleted_at IS NULL AND term_ends_at COLLATE "C" <= ${now}`,
};

export class PostgresCatalogRecords implements Records.CatalogRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async listDeals(
    ownerSub: string,
    options: Records.ListDealsOptions,
  ): Promise<Records.DealRecord[]> {
    // Deal ids are time-ordered and unique: "id < cursor" pages newest-first without gaps; a
    // state filter only skips rows of the walk.
    const params: unknown[] = [ownerSub];
    const conditions = ["owner_sub = $1"];
    if (options.beforeId !== null) {
      params.push(options.beforeId);
      conditions.push(`id < $${params.length}`);
    }
    if (options.cid) {
      params.push(options.cid);
      conditions.push(`cid = $${params.length}`);
    }
    const state = options.filter?.state;
    if (state === "deleted") conditions.push("deleted_at IS NOT NULL");
    else if (state !== undefined) {
      params.push(options.filter!.now);
      conditions.push(STATE_CONDITIONS[state](`$${params.length}`));
    }
    params.push(options.limit);
    const rows = await this.#sql.unsafe(
      `SELECT ${DEAL_COLUMNS} FROM deals WHERE ${conditions.join(" AND ")}
       ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
    return rows as unknown as Records.DealRecord[];
  }

  async getDeal(id: string): Promise<Records.DealRecord | null> {
    const [row] = await this.#sql.unsafe(`SELECT ${DEAL_COLUMNS} FROM deals WHERE id = $1`, [id]);
    return (row as unknown as Records.DealRecord | undefined) ?? null;
  }

  async extendDeal(id: string, addDays: number, termEndsAt: string): Promise<void> {
    await this.#sql`UPDATE deals SET term_days = term_days + ${addDays},
      term_ends_at = ${termEndsAt} WHERE id = ${id}`;
  }

  async withdrawDeal(input: Records.WithdrawDealInput): Promise<Records.RemovalMarkOf | null> {
    const { subject, day, bytes } = input.usage;
    return await this.#sql.begin(async (tx) => {
      const deleted = await tx.unsafe(`DELETE FROM deals WHERE id = $1 RETURNING id`, [
        input.dealId,
      ]);
      if (deleted.length !== 1) return null;
      await tx.unsafe(
        `UPDATE usage_daily SET bytes = GREATEST(0, bytes - $1), uploads = GREATEST(0, uploads - 1)
         WHERE subject = $2 AND day = $3`,
        [bytes, subject, day],
      );
      const marked = await tx.unsafe(
        `INSERT INTO removed_pieces (cid, removing_at)
         SELECT p.cid, $2 FROM pieces p WHERE p.cid = $1
           AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
           AND NOT EXISTS (SELECT 1 FROM deals d WHERE d.cid = p.cid)
           AND NOT EXISTS (SELECT 1 FROM manifest_pieces m WHERE m.piece_cid = p.cid)
         RETURNING mark`,
        [input.cid, input.at],
      );
      if (marked.length === 0) return null;
      // A block lives while its piece does (as a sweep's removal forgets them).
      await tx.unsafe(`DELETE FROM blocks WHERE piece_cid = $1`, [input.cid]);
      return { mark: Number(marked[0].mark), cid: input.cid };
    });
  }

  async deleteDeal(id: string, at: string): Promise<void> {
    await this.#sql.unsafe(
      `UPDATE deals SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL`,
      [at, id],
    );
  }

  async usageBetween(subject: string, from: string, to: string): Promise<Records.UsageRecord[]> {
    // A reservation makes a row before any upload lands: such rows are not usage.
    const rows = await this.#sql`SELECT day, bytes, uploads FROM usage_daily
      WHERE subject = ${subject} AND day >= ${from} AND day <= ${to} AND uploads > 0
      ORDER BY day`;
    return rows.map((row) => ({
      subject,
      day: row.day as string,
      bytes: Number(row.bytes),
      uploads: Number(row.uploads),
    }));
  }

  async getPiece(cid: string): Promise<Records.PieceRecord | null> {
    const [row] = await this.#sql.unsafe(`SELECT ${PIECE_COLUMNS} WHERE p.cid = $1`, [cid]);
    return (row as unknown as Records.PieceRecord | undefined) ?? null;
  }

  async setPieceSha256(cid: string, sha256: string): Promise<void> {
    await this.#sql`UPDATE pieces SET sha256 = ${sha256} WHERE cid = ${cid} AND sha256 IS NULL`;
  }

  async piecesWithoutSha256(): Promise<string[]> {
    const rows = await this.#sql`SELECT cid FROM pieces WHERE sha256 IS NULL ORDER BY cid`;
    return rows.map((row) => row.cid as string);
  }

  async setPieceCidV2(cid: string, pieceCidV2: string): Promise<void> {
    const [v2, v1] = pieceCidsOf({ pieceCidV2 });
    await this.#sql`UPDATE pieces SET piece_cid_v2 = ${v2}, piece_cid_v1 = ${v1}
      WHERE cid = ${cid} AND piece_cid_v2 IS NULL`;
  }

  async piecesWithoutPieceCidV2(): Promise<string[]> {
    // A removed piece has no bytes to hash; an upload that stores it again sets its v2 anew.
    const rows = await this.#sql`SELECT cid FROM pieces p WHERE piece_cid_v2 IS NULL
      AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid) ORDER BY cid`;
    return rows.map((row) => row.cid as string);
  }

  async findPieceByPieceCid(pieceCid: string): Promise<Records.PieceRecord | null> {
    const [row] = await this.#sql.unsafe(
      `SELECT ${PIECE_COLUMNS} WHERE p.piece_cid_v2 = $1 OR p.piece_cid_v1 = $1
       ORDER BY ${SERVABLE_FIRST} LIMIT 1`,
      [pieceCid],
    );
    return (row as unknown as Records.PieceRecord | undefined) ?? null;
  }

  async piecesAfter(afterCid: string, limit: number): Promise<Records.PieceRecord[]> {
    const rows = await this.#sql.unsafe(
      `SELECT ${PIECE_COLUMNS} WHERE p.cid > $1 ORDER BY p.cid LIMIT $2`,
      [afterCid, limit],
    );
    return rows as unknown as Records.PieceRecord[];
  }

  async markPieceCorrupt(cid: string, at: string, problem: string): Promise<boolean> {
    // Marks change only from the state the scrub saw, so a repair in between is never undone.
    const result = await this.#sql`INSERT INTO corrupt_pieces (cid, marked_at, problem)
      VALUES (${cid}, ${at}, ${problem}) ON CONFLICT (cid) DO NOTHING`;
    return result.count === 1;
  }

  async clearPieceCorrupt(cid: string, markedAt: string): Promise<boolean> {
    const result = await this.#sql`DELETE FROM corrupt_pieces
      WHERE cid = ${cid} AND marked_at = ${markedAt}`;
    return result.count === 1;
  }

  async corruptMarksAfter(mark: number): Promise<{ mark: number; cid: string }[]> {
    const rows = await this.#sql`SELECT mark, cid FROM corrupt_pieces
      WHERE mark > ${mark} ORDER BY mark LIMIT 1000`;
    return rows.map((row) => ({ mark: Number(row.mark), cid: row.cid as string }));
  }

  async corruptPieceCids(): Promise<string[]> {
    const rows = await this.#sql`SELECT cid FROM corrupt_pieces ORDER BY cid`;
    return rows.map((row) => row.cid as string);
  }

  async storedTotals(): Promise<{ pieces: number; bytes: number }> {
    const [row] = await this.#sql`SELECT COUNT(*)::int8 AS pieces,
      COALESCE(SUM(size), 0)::int8 AS bytes FROM pieces p
      WHERE NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)`;
    return { pieces: Number(row.pieces), bytes: Number(row.bytes) };
  }

  async usedBytes(subject: string, day: string): Promise<number> {
    const [row] = await this.#sql`SELECT bytes FROM usage_daily
      WHERE subject = ${subject} AND day = ${day}`;
    return row ? Number(row.bytes) : 0;
  }

  async recordUpload(input: Records.RecordUploadInput): Promise<void> {
    await this.#sql.begin(async (tx) => {
      const p = input.newPiece;
      if (p) {
        const [v2, v1] = pieceCidsOf(p);
        await tx`INSERT INTO pieces (cid, size, sha256, content_type, filename, created_at,
                                     piece_cid_v2, piece_cid_v1)
          VALUES (${p.cid}, ${p.size}, ${p.sha256}, ${p.contentType}, ${p.filename},
                  ${p.createdAt}, ${v2}, ${v1})`;
      }
      const revived = input.revivedPiece;
      if (revived) {
        await tx.unsafe(
          `UPDATE pieces SET size = $1, sha256 = $2, content_type = $3, filename = $4,
             created_at = $5, piece_cid_v2 = $6, piece_cid_v1 = $7 WHERE cid = $8`,
          [
            revived.size,
            revived.sha256,
            revived.contentType,
            revived.filename,
            revived.createdAt,
            ...pieceCidsOf(revived),
            revived.cid,
          ],
        );
        await tx.unsafe(`DELETE FROM removed_pieces WHERE cid = $1`, [revived.cid]);
        await tx.unsafe(`DELETE FROM corrupt_pieces WHERE cid = $1`, [revived.cid]);
        await tx.unsafe(`DELETE FROM manifest_pieces WHERE manifest_cid = $1`, [revived.cid]);
      }
      if (input.manifestListing) await recordListing(tx, input.deal.cid, input.manifestListing);
      const repaired = input.repairedPiece;
      if (repaired) {
        await tx`UPDATE pieces SET sha256 = ${repaired.sha256} WHERE cid = ${repaired.cid}`;
        await tx`DELETE FROM corrupt_pieces WHERE cid = ${repaired.cid}`;
      }
      const d = input.deal;
      await tx`INSERT INTO deals (id, cid, tier, owner_sub, owner, size, content_type, filename,
                                 term_days, created_at, term_ends_at, deleted_at)
        VALUES (${d.id}, ${d.cid}, ${d.tier}, ${d.ownerSub}, ${d.ownerName}, ${d.size},
                ${d.contentType}, ${d.filename}, ${d.termDays}, ${d.createdAt}, ${d.termEndsAt},
                ${d.deletedAt})`;
      const u = input.usage;
      await tx`INSERT INTO usage_daily (subject, day, bytes, uploads)
        VALUES (${u.subject}, ${u.day}, ${u.bytes}, 1)
        ON CONFLICT (subject, day) DO UPDATE
        SET bytes = usage_daily.bytes + excluded.bytes, uploads = usage_daily.uploads + 1`;
      if (input.blocks) await indexBlocks(tx, d.cid, input.blocks);
      if (input.reservation) {
        // From reserved to used in the same commit: never counted twice, never not at all.
        const [held] = await tx`DELETE FROM cap_reservations WHERE id = ${input.reservation.id}
          RETURNING subject, day, bytes`;
        if (held) {
          await tx`UPDATE usage_daily SET reserved_bytes = reserved_bytes - ${held.bytes}
            WHERE subject = ${held.subject} AND day = ${held.day}`;
        }
      }
      const finished = input.finishesResumable;
      if (finished) {
        const marked = await tx`UPDATE resumable_uploads SET received = length,
            staging = 'null', deal_id = ${d.id}, expires_ms = ${finished.expiresMs},
            roots = ${finished.roots === null ? null : JSON.stringify(finished.roots)}
          WHERE id = ${finished.id} AND received = ${finished.fromBytes} AND deal_id IS NULL`;
        if (marked.count !== 1) throw new ResumableUploadMovedError(finished.id);
      }
    });
    input.reservation?.markSettled();
  }
}
