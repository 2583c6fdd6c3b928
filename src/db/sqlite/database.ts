/**
 * Opens the embedded SQLite database (node:sqlite, built into Deno) and brings
 * its schema up to date. WAL lets readers (retrievals) run beside the writer;
 * synchronous=FULL makes a committed deal survive power loss, because a 200
 * to an upload is a promise that it was kept.
 */
import { backup as sqliteBackup, DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "./migrations/mod.ts";
import type { Migration } from "./migrations/mod.ts";
import { DatabaseTooNewError } from "../too_new.ts";

export { DatabaseTooNewError };

export type Database = DatabaseSync;

export interface OpenDatabaseOptions {
  /** File path, or ":memory:" when no data directory is bound. */
  path: string;
  migrations?: readonly Migration[];
  /** How long a statement waits for another connection's lock (SQLITE_BUSY after). */
  busyTimeoutMs?: number;
}

export function openDatabase(options: OpenDatabaseOptions): Database {
  const db = new DatabaseSync(options.path);
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)}`);
    if (options.path !== ":memory:") db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db, options.migrations ?? MIGRATIONS);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * One snapshot of a live database into the file at `target` (a backup's):
 * SQLite's online backup with rate -1, every page in one step under one read
 * transaction. In steps, a write by the server between two of them would
 * restart the copy, over and over under load. What is still in the WAL is in
 * the snapshot.
 */
/** The database as it is, read-only and unmigrated (a backup brings its copy up to date). */
export function openDatabaseReadOnly(path: string): Database {
  return new DatabaseSync(path, { readOnly: true });
}

export async function snapshotDatabase(db: Database, target: string): Promise<void> {
  await sqliteBackup(db, target, { rate: -1 });
}

/** The schema version a database is at, and the one this build's migrations reach. */
export function schemaVersions(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): { current: number; latest: number } {
  const current = Number(
    (db.prepare("PRAGMA user_version").get() as { user_version: number })
      .user_version,
  );
  return { current, latest: migrations.at(-1)?.version ?? 0 };
}

/** Applies every migration newer than the database's user_version, each in its own transaction. */
export function migrate(db: Database, migrations: readonly Migration[]): void {
  const { current, latest } = schemaVersions(db, migrations);
  if (current > latest) throw new DatabaseTooNewError(current, latest);
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    // The pragma is a no-op inside a transaction, so it is switched around it.
    const restoreForeignKeys = migration.rebuildsTables === true && foreignKeysOn(db);
    if (migration.rebuildsTables) db.exec("PRAGMA foreign_keys = OFF");
    try {
      transaction(db, () => {
        db.exec(migration.sql);
        if (migration.rebuildsTables) {
          const broken = db.prepare("PRAGMA foreign_key_check").all();
          if (broken.length > 0) {
            throw new Error(
              `Migration ${migration.version} would break ${broken.length} foreign keys`,
            );
          }
        }
        db.exec(`PRAGMA user_version = ${migration.version}`);
      });
    } finally {
      if (restoreForeignKeys) db.exec("PRAGMA foreign_keys = ON");
    }
  }
}

function foreignKeysOn(db: Database): boolean {
  const row = db.prepare("PRAGMA foreign_keys").get() as { foreign_keys: number };
  return Number(row.foreign_keys) === 1;
}

/** Runs fn inside BEGIN IMMEDIATE … COMMIT, rolling back if it throws. */
export function transaction<T>(db: Database, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

/** True for SQLite's "database is locked/busy" errors (another connection holds a lock). */
export function isDatabaseBusy(error: unknown): boolean {
  const e = error as { errcode?: number; message?: string } | null;
  // SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes in the high byte.
  const primary = typeof e?.errcode === "number" ? e.errcode & 0xff : -1;
  return primary === 5 || primary === 6 || /database is (locked|busy)/i.test(e?.message ?? "");
}
