/**
 * Who may write now, as the ports the catalog and the sweep wait on: one
 * commit per cid at a time, and one garbage-collection sweep at a time.
 * Declared here because each has two implementations on either side of db/'s
 * wall: in this process's memory where one process owns the metadata
 * (catalog/cid_locks.ts, catalog/sweep_turn.ts), and database locks where
 * instances share a PostgreSQL database (db/postgres/cid_locks.ts,
 * db/postgres/sweep_turn.ts).
 */

/**
 * One commit per cid at a time. The catalog decides "new piece, same bytes or
 * conflict" from what the records say and then writes; two uploads of one cid
 * deciding at once could both see "new" and the loser would delete the
 * winner's bytes. Different cids never wait for each other.
 */
export interface CidLocks {
  /**
   * Runs fn while holding the cid's lock; the lock is released however fn
   * ends. `lockLost` aborts if the lock is lost while fn runs (a database
   * lock whose connection died): fn must then stop before it writes.
   */
  run<T>(cid: string, fn: (lockLost: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * Runs fn while holding the locks of every cid (a sweep's batch of
   * removals), `lockLost` as for run. They are taken in cid order, and
   * uploads hold one at a time, so no two holders ever wait for each other
   * in a circle.
   */
  runAll<T>(cids: readonly string[], fn: (lockLost: AbortSignal) => Promise<T>): Promise<T>;
}

export type TurnResult<T> = { ran: true; value: T } | { ran: false };

/**
 * One garbage-collection sweep at a time across every process that shares
 * the metadata: two sweeps would race each other's removals and double the
 * load on the store for nothing. A sweep that finds another running does not
 * wait: the running one does the work.
 */
export interface SweepTurn {
  /**
   * Runs fn unless a sweep runs already, here or in another process.
   * `turnLost` aborts if the turn is lost while fn runs (a database lock whose
   * connection died): fn should stop then, since another sweep may start.
   */
  tryRun<T>(fn: (turnLost: AbortSignal) => Promise<T>): Promise<TurnResult<T>>;
}
