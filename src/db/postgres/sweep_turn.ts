/**
 * One garbage-collection sweep at a time across every instance and `main.ts
 * gc` sharing the database (see domain/locks.ts): a session-level
 * advisory lock, tried without waiting and held on a connection of the lock
 * pool for the whole sweep. A sweeper that dies drops its connection, and
 * PostgreSQL the lock with it, so the next one may start at once; a
 * connection lost under a running sweep aborts `turnLost`, and the sweep
 * stops between two removals (each of which stands on its own). The same
 * kind of turn, under a key of its own, lets one instance hand off at a time.
 */
import type { SweepTurn, TurnResult } from "../../domain/locks.ts";
import type { PostgresPool } from "./connection.ts";

/** An arbitrary constant, apart from the migration lock's: the sweep's advisory lock. */
const SWEEP_LOCK_KEY = 0x5357_4550;

export interface PostgresSweepTurnOptions {
  /** The pool the cid locks use: connections held for a while. */
  locks: PostgresPool;
  /** Bound of each statement (--db-timeout). */
  timeoutMs: number;
  /**
   * The advisory lock that makes the turn (default the sweep's): another
   * key is another turn, taken independently (the hand-off's, say).
   */
  key?: number;
}

export class PostgresSweepTurn implements SweepTurn {
  readonly #options: PostgresSweepTurnOptions;

  constructor(options: PostgresSweepTurnOptions) {
    this.#options = options;
  }

  async tryRun<T>(fn: (turnLost: AbortSignal) => Promise<T>): Promise<TurnResult<T>> {
    const { locks, timeoutMs, key = SWEEP_LOCK_KEY } = this.#options;
    const session = await locks.checkout();
    let held = false;
    try {
      const [row] = await session.query(
        "SELECT pg_try_advisory_lock($1) AS taken",
        [key],
        timeoutMs,
      );
      held = row.taken === true;
      if (!held) return { ran: false };
      return { ran: true, value: await fn(session.lost) };
    } finally {
      if (held && session.usable) {
        await session.query("SELECT pg_advisory_unlock($1)", [key], timeoutMs)
          // Not known to be unlocked: the connection goes, and the lock with it.
          .catch((error) => session.cut(error));
      }
      session.release();
    }
  }
}
