/** Refusing a schema newer than this build, for both backends (SQLite and PostgreSQL). */

/**
 * The database was migrated by a newer build of this program: an older one
 * would read and write a schema it does not know (a renamed column, a rebuilt
 * table). It refuses to start instead.
 */
export class DatabaseTooNewError extends Error {
  constructor(found: number, known: number) {
    super(
      `The database's schema is version ${found}, newer than the ${known} this program knows: ` +
        "run the newer build that migrated it (or restore a backup made before)",
    );
    this.name = "DatabaseTooNewError";
  }
}
