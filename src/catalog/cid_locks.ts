/**
 * One commit per cid at a time. The catalog decides "new piece, same bytes or
 * conflict" from what the records say and then writes; two uploads of one cid
 * deciding at once could both see "new" and the loser would delete the
 * winner's bytes. Different cids never wait for each other.
 *
 * LocalCidLocks serialises within this process: enough when one process owns
 * the records (the SQLite default). Processes that share a Postgres database
 * also take a database lock per cid (db/postgres/cid_locks.ts).
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

/** A lock held in this process's memory is never lost while the process lives. */
const NEVER_LOST = new AbortController().signal;

export class LocalCidLocks implements CidLocks {
  /** Per-cid queue: the last commit queued for each cid that has one running. */
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(cid: string, fn: (lockLost: AbortSignal) => Promise<T>): Promise<T> {
    const previous = this.#tails.get(cid) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(() => fn(NEVER_LOST));
    this.#tails.set(cid, run);
    try {
      return await run;
    } finally {
      if (this.#tails.get(cid) === run) this.#tails.delete(cid);
    }
  }

  runAll<T>(cids: readonly string[], fn: (lockLost: AbortSignal) => Promise<T>): Promise<T> {
    const ordered = [...new Set(cids)].sort();
    const nested = ordered.reduceRight<() => Promise<T>>(
      (inner, cid) => () => this.run(cid, inner),
      () => fn(NEVER_LOST),
    );
    return nested();
  }
}
