/**
 * The PostgreSQL client (postgres.js) as this service uses it: BIGINT
 * columns parsed to numbers (sizes and counters stay far below 2^53), a
 * bounded connect timeout so a dead database fails requests quickly instead
 * of hanging them, and notices kept out of the logs.
 */
import postgres from "postgres";

/** What the records classes query with: a pool or a transaction. */
export type Sql = postgres.Sql<Record<string, unknown>>;
export type TransactionSql = postgres.TransactionSql<Record<string, unknown>>;

export interface ConnectOptions {
  url: string;
  /** Connections in the pool. */
  max: number;
  /** Seconds a new connection may take (default 5). */
  connectTimeoutSeconds?: number;
}

/** int8 (OID 20): read as a JavaScript number. */
const BIGINT_AS_NUMBER = {
  to: 20,
  from: [20],
  serialize: (value: number | bigint) => String(value),
  parse: (text: string) => Number(text),
};

export function connect(options: ConnectOptions): Sql {
  return postgres(options.url, {
    max: options.max,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    // Idle connections go after a minute: N instances must not pin the server's slots.
    idle_timeout: 60,
    types: { bigint: BIGINT_AS_NUMBER },
    onnotice: () => {},
  }) as unknown as Sql;
}

/** host:port/database of a URL, without user or password (for messages and logs). */
export function whereOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return "(unparseable URL)";
  }
}

/**
 * True for failures that mean "the database cannot be reached or is going
 * away" (answered 503 and retried later), as opposed to a bug in a query.
 */
export function isPostgresUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  // postgres.js' own connection codes, and Node's socket errors.
  if (
    /^(CONNECT_TIMEOUT|CONNECTION_(CLOSED|ENDED|DESTROYED)|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH)$/
      .test(code)
  ) return true;
  // SQLSTATE classes 08 (connection exception), 53 (insufficient resources), 57P (shutdown).
  return /^(08|53)/.test(code) || /^57P0[1-3]$/.test(code);
}
