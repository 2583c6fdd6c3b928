/**
 * "The database cannot be used right now", as one error type, whatever the
 * client or the server said: a refused or reset connection, a deadline
 * passed, a server shutting down or recovering, a standby reached instead of
 * a primary. The HTTP layer answers it 503 storage_offline with Retry-After
 * (http/pipeline/errors.ts); anything else a query throws is a bug or a rule
 * (a constraint) and stays what it is.
 */

export class DatabaseUnavailableError extends Error {
  readonly code = "DATABASE_UNAVAILABLE";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DatabaseUnavailableError";
  }
}

/** Socket and client codes that mean no usable connection. */
const CONNECTION_CODES =
  /^(DATABASE_UNAVAILABLE|CONNECT_TIMEOUT|CONNECTION_(CLOSED|ENDED|DESTROYED)|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)$/;

/**
 * node-postgres reports its own connection states as plain Errors without a
 * code; these are their messages (pg 8.23: client.js, pg-pool).
 */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|is not queryable|Client was closed|Client has already been connected|Cannot use a pool after calling end/;

/**
 * SQLSTATEs of a database that is away or cannot take this now: 08 (connection
 * exception), 53 (insufficient resources), 57P01-04 (shutdown, crash
 * shutdown, cannot connect now, database dropped), 57014 (statement timeout
 * or cancelled), 55P03 (lock timeout), 25006 (read-only: a standby), 40001
 * and 40P01 (serialization failure, deadlock: retry).
 */
const UNAVAILABLE_STATES = /^(08|53)|^(57P0[1-4]|57014|55P03|25006|40001|40P01)$/;

/** Whether error means "the database is unavailable now" (503 and retry), not a bug. */
export function isPostgresUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (CONNECTION_CODES.test(code) || UNAVAILABLE_STATES.test(code))) {
    return true;
  }
  return typeof message === "string" && CONNECTION_MESSAGES.test(message);
}

/** Whether error means the connection itself is unusable (to be destroyed, not reused). */
export function isConnectionLost(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (CONNECTION_CODES.test(code) || /^(08|57P0[1-4]|25006)/.test(code)) return true;
  }
  return typeof message === "string" && CONNECTION_MESSAGES.test(message);
}

/**
 * The failure a caller sees: an "unavailable" one as DatabaseUnavailableError
 * naming where (the original as its cause), anything else as it is.
 */
export function asUnavailable(error: unknown, where: string): unknown {
  if (error instanceof DatabaseUnavailableError || !isPostgresUnavailable(error)) return error;
  return new DatabaseUnavailableError(`PostgreSQL at ${where}: ${(error as Error).message}`, {
    cause: error,
  });
}
