/**
 * The statements of the pieces' PieceCIDv2 and v1 (migration 0012_piece_cids):
 * set once known, the pieces still without one, a piece found by either.
 */
import type { StatementSync } from "node:sqlite";
import type { Database } from "./database.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";
import { pieceCidsOf, SERVABLE_FIRST } from "../piece_cid_columns.ts";

export class PieceCidStatements {
  readonly #set: StatementSync;
  readonly #unknown: StatementSync;
  readonly #find: StatementSync;

  /** `pieceColumns`: a PieceRecord's columns FROM the records' joins (catalog_records.ts). */
  constructor(db: Database, pieceColumns: string) {
    this.#set = db.prepare(
      `UPDATE pieces SET piece_cid_v2 = ?, piece_cid_v1 = ? WHERE cid = ? AND piece_cid_v2 IS NULL`,
    );
    // A removed piece has no bytes to hash; an upload that stores it again sets its v2 anew.
    this.#unknown = db.prepare(
      `SELECT cid FROM pieces p WHERE piece_cid_v2 IS NULL
         AND NOT EXISTS (SELECT 1 FROM removed_pieces r WHERE r.cid = p.cid)
       ORDER BY cid`,
    );
    this.#find = db.prepare(
      `SELECT ${pieceColumns} WHERE p.piece_cid_v2 = ?1 OR p.piece_cid_v1 = ?1
       ORDER BY ${SERVABLE_FIRST} LIMIT 1`,
    );
  }

  set(cid: string, pieceCidV2: string): void {
    const [v2, v1] = pieceCidsOf({ pieceCidV2 });
    this.#set.run(v2, v1, cid);
  }

  unknown(): string[] {
    return (this.#unknown.all() as { cid: string }[]).map((row) => row.cid);
  }

  find(pieceCid: string): PieceRecord | null {
    return (this.#find.get(pieceCid) as PieceRecord | undefined) ?? null;
  }
}
