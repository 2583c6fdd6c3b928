/**
 * Per-cid commit locks across instances (see storage/cid_locks.ts for why):
 * a session-level advisory lock on the cid's 64-bit hash, held on a
 * connection of a pool kept for locks only, so a commit waiting for its lock
 * never starves the queries of the commits that hold one. If an instance dies
 * holding a lock, its connection closes and PostgreSQL drops the lock.
 */
import type { Sql } from "./connection.ts";

export class PostgresCidLocks {
  readonly #locks: Sql;

  /** `locks` is a pool of its own; its size bounds the commits that wait at once. */
  constructor(locks: Sql) {
    this.#locks = locks;
  }

  async run<T>(cid: string, fn: () => Promise<T>): Promise<T> {
    const connection = await this.#locks.reserve();
    try {
      await connection`SELECT pg_advisory_lock(hashtextextended(${cid}, 0))`;
      try {
        return await fn();
      } finally {
        await connection`SELECT pg_advisory_unlock(hashtextextended(${cid}, 0))`.catch(() => {});
      }
    } finally {
      connection.release();
    }
  }
}
