/**
 * The PostgreSQL client as this service uses it: node-postgres (pg) and its
 * pool (chosen over postgres.js by measurement: docs/scale-out.md), behind
 * a small tagged-template API, `sql\`SELECT … WHERE id = ${id}\``, whose
 * values are always sent as parameters, never spliced into the text.
 *
 * What makes it survive its database:
 *   - every call has a deadline (--db-timeout): a connection, a statement, a
 *     whole transaction; past it the socket is destroyed (checkout.ts) and
 *     the call fails as DatabaseUnavailableError (503, Retry-After); the
 *     server cancels a statement past it too (statement_timeout, lock_timeout);
 *   - a database that does not answer at all is found within seconds and
 *     calls then fail at once until it answers again (src/kernel/liveness.ts,
 *     probed with a connection of its own);
 *   - connections that die in or out of the pool are caught (no uncaught
 *     error ends the process) and never reused;
 *   - several hosts in the URL fail over to whichever takes writes
 *     (failover.ts); TCP keepalive finds a peer that vanished.
 * BIGINT columns are parsed to numbers (sizes and counters stay far below
 * 2^53).
 */
// @deno-types="@types/pg"
import pg from "pg";
import type { Liveness } from "../../kernel/liveness.ts";
import { parsePostgresUrl } from "../../kernel/postgres_url.ts";
import { Checkout, destroySocket, raceAbort } from "./checkout.ts";
import type { Row, Rows } from "./checkout.ts";
import { failoverClient, hostCursor, requireWritable } from "./failover.ts";
import { asUnavailable, DatabaseUnavailableError, isPostgresUnavailable } from "./unavailable.ts";

export type { Row, Rows };
export { isPostgresUnavailable } from "./unavailable.ts";
export { whereOf } from "../../kernel/postgres_url.ts";

/** A piece of SQL with parameters of its own, spliced into a tagged template. */
export class Fragment {
  constructor(readonly render: (parameter: (value: unknown) => string) => string) {}
}

/** What the records query with: the pool, or one transaction's connection. */
export interface Queryable {
  (strings: TemplateStringsArray, ...values: unknown[]): Promise<Rows>;
  /** Text written out (column lists), with $n parameters. */
  unsafe(text: string, params?: readonly unknown[]): Promise<Rows>;
  /** `INSERT INTO t ${sql.values(rows, columns)}`: the columns, then one VALUES tuple a row. */
  values(rows: readonly Row[], columns: readonly string[]): Fragment;
  /** `WHERE x IN ${sql.list(values)}`. */
  list(values: readonly unknown[]): Fragment;
}

export type TransactionSql = Queryable;

export interface TransactionOptions {
  /** After BEGIN, e.g. "ISOLATION LEVEL REPEATABLE READ READ ONLY". */
  mode?: string;
  /**
   * "whole" (default): the whole transaction within the deadline. "each
   * statement": each statement within it, the transaction as long as its
   * caller takes (a backup's snapshot, read while pieces are copied).
   */
  deadline?: "whole" | "each statement";
  /** Instead of the pool's deadline (migrations at start wait for each other). */
  timeoutMs?: number;
}

export interface Sql extends Queryable {
  /** Runs fn in a transaction on one connection: committed if fn resolves, else rolled back. */
  begin<T>(fn: (tx: TransactionSql) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

export interface PoolOptions {
  url: string;
  /** Connections in the pool. */
  max: number;
  /** Bound of every call: connection, statement, transaction. */
  timeoutMs: number;
  /** Whether the database answers at all; the pools of one database share it. */
  liveness: Liveness;
}

const INT8 = 20;
/** Idle connections go after a minute: N instances must not pin the server's slots. */
const IDLE_MS = 60_000;

export class PostgresPool {
  readonly sql: Sql;
  readonly where: string;
  readonly #pool: pg.Pool;
  readonly #options: PoolOptions;

  constructor(options: PoolOptions) {
    this.#options = options;
    this.#pool = new pg.Pool(poolConfig(options));
    this.where = parsePostgresUrl(options.url).where;
    // An idle connection that dies (a restart) is reported here; without a listener it
    // would be an uncaught error. The pool drops it; the next call makes a new one.
    this.#pool.on("error", (error) => options.liveness.suspect(error.message));
    this.sql = Object.assign(this.#queryable((call) => this.#call(call)), {
      begin: <T>(fn: (tx: TransactionSql) => Promise<T>, transaction: TransactionOptions = {}) =>
        this.#transaction(fn, transaction),
    });
  }

  /**
   * A connection of the caller's own until it releases it, for session state
   * (the cid locks' advisory locks): bounded by the deadline to get it.
   */
  async checkout(): Promise<Checkout> {
    await this.#options.liveness.admit();
    const halt = new AbortController();
    const stopWaiting = this.#options.liveness.waiting(halt);
    const timer = setTimeout(() => {
      halt.abort(this.#deadline(this.#options.timeoutMs));
      this.#options.liveness.suspect(`no connection within ${this.#options.timeoutMs} ms`);
    }, this.#options.timeoutMs);
    const connecting = this.#pool.connect();
    try {
      const client = await raceAbort(connecting, [halt.signal]);
      this.#options.liveness.answered();
      return new Checkout(client, { liveness: this.#options.liveness, where: this.where });
    } catch (error) {
      if (halt.signal.aborted) {
        // A connection that arrives after all is not wanted.
        connecting.then((client) => client.release(true), () => {});
        throw halt.signal.reason;
      }
      if (isPostgresUnavailable(error)) this.#options.liveness.suspect((error as Error).message);
      throw asUnavailable(error, this.where);
    } finally {
      clearTimeout(timer);
      stopWaiting();
    }
  }

  /** Ends every connection; bounded, as a hung server would not answer a goodbye. */
  async end(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#pool.end().catch(() => {}),
      new Promise((resolve) => timer = setTimeout(resolve, this.#options.timeoutMs)),
    ]);
    clearTimeout(timer);
  }

  /** One statement on a connection of its own. */
  async #call(call: { text: string; params: readonly unknown[] }): Promise<Rows> {
    const checkout = await this.checkout();
    try {
      return await checkout.query(call.text, call.params, this.#options.timeoutMs);
    } finally {
      checkout.release();
    }
  }

  async #transaction<T>(
    fn: (tx: TransactionSql) => Promise<T>,
    options: TransactionOptions,
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
    const whole = (options.deadline ?? "whole") === "whole";
    const started = performance.now();
    const checkout = await this.checkout();
    // The whole transaction's deadline: what is left of it bounds each statement.
    const leftMs = () => whole ? Math.max(1, timeoutMs - (performance.now() - started)) : timeoutMs;
    const run = (text: string, params: readonly unknown[] = []) =>
      checkout.query(text, params, leftMs());
    try {
      await run(options.mode ? `BEGIN ${options.mode}` : "BEGIN");
      // A long reader's connection idles between statements: not a stuck transaction.
      if (!whole) await run("SET LOCAL idle_in_transaction_session_timeout = 0");
      let result: T;
      try {
        result = await fn(this.#queryable((call) => run(call.text, call.params)));
      } catch (error) {
        if (checkout.usable) await run("ROLLBACK").catch(() => checkout.cut("rollback failed"));
        throw error;
      }
      await run("COMMIT");
      return result;
    } finally {
      checkout.release();
    }
  }

  #queryable(run: (call: { text: string; params: readonly unknown[] }) => Promise<Rows>) {
    const tagged = (strings: TemplateStringsArray, ...values: unknown[]) =>
      run(compose(strings, values));
    return Object.assign(tagged, {
      unsafe: (text: string, params: readonly unknown[] = []) => run({ text, params }),
      values: valuesFragment,
      list: listFragment,
    });
  }

  #deadline(ms: number): DatabaseUnavailableError {
    return new DatabaseUnavailableError(
      `PostgreSQL at ${this.where}: no connection within ${ms} ms (--db-timeout)`,
    );
  }
}

/**
 * Whether the database answers, for kernel/liveness.ts: each call connects once
 * (with several hosts, to the one its own cursor points at, so successive
 * probes walk the hosts too), asks, and disconnects.
 */
export function databaseProbe(url: string): (signal: AbortSignal) => Promise<boolean> {
  const target = parsePostgresUrl(url);
  const cursor = hostCursor(target.hostUrls);
  const Client = failoverClient(cursor);
  const writable = requireWritable(cursor, target.where);
  return async (signal) => {
    const client = new Client({ connectionTimeoutMillis: 60_000 });
    client.on("error", () => {});
    const close = () => {
      destroySocket(client);
      client.end().catch(() => {});
    };
    signal.addEventListener("abort", close, { once: true });
    try {
      await raceAbort(client.connect(), [signal]);
      if (target.readWrite) await raceAbort(writable(client), [signal]);
      else await raceAbort(client.query("SELECT 1"), [signal]);
      return true;
    } catch {
      return false;
    } finally {
      signal.removeEventListener("abort", close);
      close();
    }
  };
}

function poolConfig(options: PoolOptions): pg.PoolConfig {
  const target = parsePostgresUrl(options.url);
  const cursor = hostCursor(target.hostUrls);
  return {
    max: options.max,
    ...(target.hostUrls.length > 1
      ? { Client: failoverClient(cursor) }
      : { connectionString: target.hostUrls[0] }),
    ...(target.readWrite ? { onConnect: requireWritable(cursor, target.where) } : {}),
    // Waiting for a free connection and making a new one, together.
    connectionTimeoutMillis: options.timeoutMs,
    idleTimeoutMillis: IDLE_MS,
    // The server gives up on a statement, and on a lock wait, at the deadline too.
    statement_timeout: options.timeoutMs,
    lock_timeout: options.timeoutMs,
    // A transaction whose client vanished is rolled back by the server.
    idle_in_transaction_session_timeout: Math.max(IDLE_MS, options.timeoutMs * 4),
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: "storage-service",
    types: {
      getTypeParser:
        ((oid: number, format?: string) =>
          oid === INT8
            ? (text: string) => Number(text)
            : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
    },
  };
}

/** A tagged template as text with $n placeholders and its parameters. */
function compose(strings: TemplateStringsArray, values: unknown[]) {
  const params: unknown[] = [];
  const parameter = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  let text = strings[0];
  values.forEach((value, i) => {
    text += (value instanceof Fragment ? value.render(parameter) : parameter(value)) +
      strings[i + 1];
  });
  return { text, params };
}

function valuesFragment(rows: readonly Row[], columns: readonly string[]): Fragment {
  if (rows.length === 0) throw new RangeError("sql.values() needs at least one row");
  return new Fragment((parameter) => {
    const tuples = rows.map((row) =>
      `(${columns.map((c) => parameter(row[c] ?? null)).join(", ")})`
    );
    return `(${columns.map(quoteIdentifier).join(", ")}) VALUES ${tuples.join(", ")}`;
  });
}

function listFragment(values: readonly unknown[]): Fragment {
  if (values.length === 0) throw new RangeError("sql.list() needs at least one value");
  return new Fragment((parameter) => `(${values.map(parameter).join(", ")})`);
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
