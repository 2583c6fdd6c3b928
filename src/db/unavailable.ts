/**
 * Whether an error is the database saying "not now": SQLite busy past its
 * timeout, or PostgreSQL out of reach. The request pipeline answers either
 * with 503 and a Retry-After without knowing which dialect is behind it, so
 * nothing above db/ imports a dialect to ask.
 */
import { isDatabaseBusy } from "./sqlite/database.ts";
import { isPostgresUnavailable } from "./postgres/connection.ts";

export type DatabaseUnavailable =
  | { kind: "busy" }
  /** `code`: the driver's SQLSTATE or connection code (ECONNREFUSED), for the log. */
  | { kind: "unreachable"; code: string | undefined };

export function databaseUnavailable(error: unknown): DatabaseUnavailable | null {
  if (isDatabaseBusy(error)) return { kind: "busy" };
  if (isPostgresUnavailable(error)) return { kind: "unreachable", code: errorCode(error) };
  return null;
}

/** The code a driver error carries (an SQLSTATE, or a connection code like ECONNREFUSED). */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
