/**
 * Per-cid commit locks across instances (see domain/locks.ts for why):
 * a session-level advisory lock on the cid's 64-bit hash, held on a
 * connection of a pool kept for locks only, so a commit waiting for its lock
 * never starves the queries of the commits that hold one. If an instance
 * dies holding a lock, its connection closes and PostgreSQL drops the lock.
 *
 * When the database goes away under a held lock (a restart, a failover),
 * the lock goes with the connection: `lockLost` aborts, so the commit stops
 * before it writes anything another instance may now be deciding about
 * (catalog/catalog.ts), and the connection is destroyed, never reused.
 *
 * The lock is taken with pg_try_advisory_lock, tried again every
 * LOCK_POLL_MS: each try is a short statement under the call deadline, so a
 * database that stops answering fails the wait like any call, while waiting
 * for another instance's commit of the same cid (a large server-side copy
 * may take a while) is bounded by LOCK_WAIT_MS, then answered 503.
 */
import { sleep } from "../../kernel/clock.ts";
import type { CidLocks } from "../../domain/locks.ts";
import type { Checkout } from "./checkout.ts";
import type { PostgresPool } from "./connection.ts";
import { DatabaseUnavailableError } from "./unavailable.ts";

const LOCK_POLL_MS = 50;
const LOCK_WAIT_MS = 60_000;

export interface PostgresCidLocksOptions {
  /** A pool of its own; its size bounds the commits that hold or wait for a lock at once. */
  locks: PostgresPool;
  /** Bound of each statement (--db-timeout). */
  timeoutMs: number;
}

export class PostgresCidLocks implements CidLocks {
  readonly #options: PostgresCidLocksOptions;

  constructor(options: PostgresCidLocksOptions) {
    this.#options = options;
  }

  /**
   * Runs fn holding every cid's lock (a sweep's batch of removals), all on one
   * connection: each try takes the locks it can in one statement and gives
   * them back unless it got all, so a batch never holds some while it waits
   * for others, and costs one connection of the pool, not one per cid.
   */
  async runAll<T>(
    cids: readonly string[],
    fn: (lockLost: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const { locks, timeoutMs } = this.#options;
    const wanted = [...new Set(cids)];
    const session = await locks.checkout();
    let held: string[] = [];
    try {
      const until = performance.now() + LOCK_WAIT_MS;
      while (true) {
        const rows = await session.query(
          `SELECT c AS cid, pg_try_advisory_lock(hashtextextended(c, 0)) AS taken
           FROM unnest($1::text[]) AS c`,
          [wanted],
          timeoutMs,
        );
        held = rows.filter((row) => row.taken === true).map((row) => row.cid as string);
        if (held.length === wanted.length) break;
        await unlockAll(session, held, timeoutMs);
        held = [];
        if (performance.now() > until) {
          throw new DatabaseUnavailableError(
            `Pieces of a sweep's batch have been locked for ${LOCK_WAIT_MS / 1000} s; retry later`,
          );
        }
        await sleep(LOCK_POLL_MS);
      }
      return await fn(session.lost);
    } finally {
      if (held.length > 0 && session.usable) {
        // Not known to be unlocked: the connection goes, and the locks with it.
        await unlockAll(session, held, timeoutMs).catch((error) => session.cut(error));
      }
      session.release();
    }
  }

  async run<T>(cid: string, fn: (lockLost: AbortSignal) => Promise<T>): Promise<T> {
    const { locks, timeoutMs } = this.#options;
    const session = await locks.checkout();
    let held = false;
    try {
      const until = performance.now() + LOCK_WAIT_MS;
      while (!held) {
        const [row] = await session.query(
          "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS taken",
          [cid],
          timeoutMs,
        );
        held = row.taken === true;
        if (held) break;
        if (performance.now() > until) {
          throw new DatabaseUnavailableError(
            `Another instance has been storing ${cid} for ${LOCK_WAIT_MS / 1000} s; retry later`,
          );
        }
        await sleep(LOCK_POLL_MS);
      }
      return await fn(session.lost);
    } finally {
      if (held && session.usable) {
        await session
          .query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [cid], timeoutMs)
          // Not known to be unlocked: the connection goes, and the lock with it.
          .catch((error) => session.cut(error));
      }
      session.release();
    }
  }
}

async function unlockAll(session: Checkout, cids: readonly string[], timeoutMs: number) {
  if (cids.length === 0) return;
  await session.query(
    "SELECT pg_advisory_unlock(hashtextextended(c, 0)) FROM unnest($1::text[]) AS c",
    [cids],
    timeoutMs,
  );
}
