/**
 * One garbage-collection sweep at a time across every process that shares
 * the metadata: two sweeps would race each other's removals and double the
 * load on the store for nothing. A sweep that finds another running does not
 * wait: the running one does the work.
 *
 * LocalSweepTurn is enough where one process owns the metadata (SQLite: the
 * server, or `main.ts gc` on a data directory no server holds). Processes
 * sharing a PostgreSQL database take a database lock (db/postgres/).
 */

export type TurnResult<T> = { ran: true; value: T } | { ran: false };

export interface SweepTurn {
  /**
   * Runs fn unless a sweep runs already, here or in another process.
   * `turnLost` aborts if the turn is lost while fn runs (a database lock whose
   * connection died): fn should stop then, since another sweep may start.
   */
  tryRun<T>(fn: (turnLost: AbortSignal) => Promise<T>): Promise<TurnResult<T>>;
}

/** A turn held in this process's memory is never lost while the process lives. */
const NEVER_LOST = new AbortController().signal;

export class LocalSweepTurn implements SweepTurn {
  #running = false;

  async tryRun<T>(fn: (turnLost: AbortSignal) => Promise<T>): Promise<TurnResult<T>> {
    if (this.#running) return { ran: false };
    this.#running = true;
    try {
      return { ran: true, value: await fn(NEVER_LOST) };
    } finally {
      this.#running = false;
    }
  }
}
