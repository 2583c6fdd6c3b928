// deno-lint-ignore-file require-await -- the interfaces are async for PostgreSQL; node:sqlite answers at once, and `async` still turns a throw into a rejection.
/**
 * A data directory's SQLite database as either end of a row copy
 * (db/row_copy.ts): the source of a migration into PostgreSQL, read while
 * its server may still be writing (WAL), or the target of a backup, a new
 * database of the backup's own.
 */
import type { StatementSync } from "node:sqlite";
import { SqliteCatalogRecords } from "./catalog_records.ts";
import { transaction } from "./database.ts";
import type { Database } from "./database.ts";
import { keyOf, pageQuery, PIECE_COLUMNS, pieceRowOf, TABLE_SHAPES } from "../row_copy.ts";
import type { CopiedTable, RowSource, RowTarget, TableRow, WriteCounts } from "../row_copy.ts";
import type { PieceRecord } from "../../domain/catalog_records.ts";

export class SqliteRowSource implements RowSource {
  readonly #db: Database;
  readonly #catalog: SqliteCatalogRecords;
  readonly #statements = new Map<string, StatementSync>();

  constructor(db: Database) {
    this.#db = db;
    this.#catalog = new SqliteCatalogRecords(db);
  }

  async piecesAfter(afterCid: string, limit: number): Promise<PieceRecord[]> {
    const page = await this.#catalog.piecesAfter(afterCid, limit);
    return page.map((piece) => ({ ...piece, size: Number(piece.size) }));
  }

  async rowsAfter(table: CopiedTable, after: TableRow | null, limit: number): Promise<TableRow[]> {
    const shape = TABLE_SHAPES[table];
    const text = pageQuery(shape, { after: after !== null, placeholder: () => "?" });
    const params = after === null ? [] : keyOf(shape, after);
    const rows = this.#prepared(text).all(...params, limit) as TableRow[];
    // node:sqlite's rows have no prototype; the target's client wants plain objects.
    return rows.map((row) => ({ ...row }));
  }

  #prepared(text: string): StatementSync {
    let statement = this.#statements.get(text);
    if (statement === undefined) this.#statements.set(text, statement = this.#db.prepare(text));
    return statement;
  }
}

/**
 * Writes into a new database (a backup's): every row is inserted, and one
 * already there is an error, since nothing else writes that database.
 */
export class SqliteRowTarget implements RowTarget {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async writePieces(pieces: readonly PieceRecord[]): Promise<WriteCounts> {
    const removed = pieces.filter((piece) => piece.removedAt !== null)
      .map((piece) => ({
        cid: piece.cid,
        removing_at: piece.removedAt,
        removed_at: piece.removedAt,
      }));
    // One transaction: a removed piece's row never appears without its removal.
    return transaction(this.#db, () => {
      const counts = this.#insert("pieces", PIECE_COLUMNS, pieces.map(pieceRowOf));
      this.#insert("removed_pieces", ["cid", "removing_at", "removed_at"], removed);
      return counts;
    });
  }

  async writeRows(table: CopiedTable, rows: readonly TableRow[]): Promise<WriteCounts> {
    const shape = TABLE_SHAPES[table];
    return transaction(this.#db, () => this.#insert(shape.name, shape.written, rows));
  }

  /** Inserts rows, inside the caller's transaction. */
  #insert(table: string, columns: readonly string[], rows: readonly TableRow[]): WriteCounts {
    const statement = this.#db.prepare(
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    for (const row of rows) statement.run(...columns.map((column) => row[column]));
    return { inserted: rows.length, updated: 0, deferred: 0 };
  }
}
