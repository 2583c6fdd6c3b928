/**
 * One connection taken from a pool for a call, a transaction or a cid lock,
 * with what node-postgres leaves to its user:
 *
 *   - an 'error' listener for as long as it is checked out: without one, a
 *     connection that dies then (a server restart) is an uncaught error that
 *     ends the process;
 *   - a deadline on each statement (and, with `cut`, on a whole transaction):
 *     a statement past it, or one still waiting when the database is found
 *     silent (kernel/liveness.ts), has its socket destroyed, so it fails at once,
 *     and the server rolls back whatever it had open when it sees the
 *     connection gone;
 *   - released destroyed, never back into the pool, once its state is not
 *     known to be clean (a lost or cut connection, a failed rollback).
 *
 * `lost` aborts when the connection fails while checked out: a cid lock
 * held on it is gone then (PostgreSQL drops a session's locks with it).
 */
// @deno-types="@types/pg"
import type pg from "pg";
import type { Liveness } from "../../kernel/liveness.ts";
import { asUnavailable, DatabaseUnavailableError, isConnectionLost } from "./unavailable.ts";

export type Row = Record<string, unknown>;
/** The rows a statement returned, and how many it touched (INSERT, UPDATE, DELETE). */
export type Rows = Row[] & { count: number };

export interface CheckoutContext {
  liveness: Liveness;
  /** host:port/database, for messages. */
  where: string;
}

export class Checkout {
  readonly #client: pg.PoolClient;
  readonly #context: CheckoutContext;
  readonly #lost = new AbortController();
  #broken = false;
  #released = false;

  constructor(client: pg.PoolClient, context: CheckoutContext) {
    this.#client = client;
    this.#context = context;
    client.on("error", this.#onError);
  }

  /** Aborts when the connection fails while checked out (its locks are gone with it). */
  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  /** Runs one statement within deadlineMs; its rows. */
  async query(text: string, params: readonly unknown[], deadlineMs: number): Promise<Rows> {
    if (this.#broken) throw this.#unusable();
    const halt = new AbortController();
    const stopWaiting = this.#context.liveness.waiting(halt);
    const timer = setTimeout(() => {
      halt.abort(this.#deadline(deadlineMs));
      // No answer in time: is the database there at all?
      this.#context.liveness.suspect(`a statement got no answer within ${deadlineMs} ms`);
    }, deadlineMs);
    const onHalt = () => this.cut(halt.signal.reason);
    halt.signal.addEventListener("abort", onHalt, { once: true });
    try {
      const running = this.#client.query(text, params as unknown[]);
      running.catch(() => {}); // a statement abandoned below settles unobserved
      const result = await raceAbort(running, [halt.signal, this.#lost.signal]);
      this.#context.liveness.answered();
      return rowsOf(result);
    } catch (error) {
      throw this.failure(error);
    } finally {
      clearTimeout(timer);
      stopWaiting();
      halt.signal.removeEventListener("abort", onHalt);
    }
  }

  /** Destroys the socket: what runs on it fails now, and it is never reused. */
  cut(reason: unknown): void {
    if (this.#broken) return;
    this.#broken = true;
    this.#lost.abort(reason);
    destroySocket(this.#client);
  }

  /** Whether the connection can still be trusted (not lost, cut or failed). */
  get usable(): boolean {
    return !this.#broken && !this.#lost.signal.aborted;
  }

  /**
   * What a failed statement throws: "unavailable" failures as one
   * DatabaseUnavailableError (the connection destroyed if it is the cause,
   * and the database probed); anything else as it is.
   */
  failure(error: unknown): unknown {
    if (this.#lost.signal.aborted) {
      const reason = this.#lost.signal.reason;
      return reason instanceof DatabaseUnavailableError ? reason : this.#unusable(reason);
    }
    if (isConnectionLost(error)) {
      this.cut(error);
      this.#context.liveness.suspect((error as Error).message);
    }
    return asUnavailable(error, this.#context.where);
  }

  /** Back to the pool, or destroyed when its state is not known to be clean. Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#client.off("error", this.#onError);
    this.#client.release(this.usable ? undefined : true);
  }

  readonly #onError = (error: Error) => {
    this.#broken = true;
    this.#lost.abort(this.#unusable(error));
  };

  #unusable(cause?: unknown): DatabaseUnavailableError {
    const why = (cause as Error | undefined)?.message ?? "its connection was lost";
    return new DatabaseUnavailableError(`PostgreSQL at ${this.#context.where}: ${why}`, { cause });
  }

  #deadline(ms: number): DatabaseUnavailableError {
    return new DatabaseUnavailableError(
      `PostgreSQL at ${this.#context.where} did not answer within ${ms} ms (--db-timeout)`,
    );
  }
}

/** Destroys a client's socket: pg has no other way to stop a call whose server is silent. */
export function destroySocket(client: pg.Client | pg.PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream
    ?.destroy();
}

/** The promise's outcome, or the reason of the first signal that aborts first. */
export function raceAbort<T>(promise: Promise<T>, signals: readonly AbortSignal[]): Promise<T> {
  const aborted = signals.find((signal) => signal.aborted);
  if (aborted) return Promise.reject(aborted.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (event: Event) => {
      cleanup();
      reject((event.target as AbortSignal).reason);
    };
    const cleanup = () => {
      for (const signal of signals) signal.removeEventListener("abort", onAbort);
    };
    for (const signal of signals) signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error) => {
        cleanup();
        reject(error);
      },
    );
  });
}

/** pg's result (the last one, for several statements in one text) as Rows. */
function rowsOf(result: pg.QueryResult | pg.QueryResult[]): Rows {
  const last = Array.isArray(result) ? result.at(-1)! : result;
  return Object.assign([...(last?.rows ?? [])], { count: last?.rowCount ?? 0 });
}
