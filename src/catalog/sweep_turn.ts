/**
 * The sweep's turn in this process's memory (the port, and why sweeps take
 * turns: domain/locks.ts). Enough where one process owns the metadata
 * (SQLite: the server, or `main.ts gc` on a data directory no server holds).
 * Processes sharing a PostgreSQL database take a database lock instead
 * (db/postgres/sweep_turn.ts).
 */
import type { SweepTurn, TurnResult } from "../domain/locks.ts";

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
