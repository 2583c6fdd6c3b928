/**
 * Per-cid commit locks in this process's memory (the port, and why commits of
 * one cid take turns: domain/locks.ts). Enough when one process owns the
 * records (the SQLite default). Processes that share a Postgres database also
 * take a database lock per cid (db/postgres/cid_locks.ts), behind this one.
 */
import type { CidLocks } from "../domain/locks.ts";

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
