/**
 * Several hosts for one database (a primary and its standbys), which
 * node-postgres does not do by itself: the pool makes its clients through
 * FailoverClient, each aimed at the host the cursor points at. A connection
 * that fails, or a server found in recovery (a standby, which cannot take
 * writes), moves the cursor to the next host, so the next connection tries
 * that one; after a failover (a standby promoted) the instances follow within
 * a connection attempt or two, with no restart.
 *
 * Only servers that take writes are used when `readWrite` (libpq's
 * target_session_attrs=read-write, implied by several hosts): every new
 * connection asks `pg_is_in_recovery()` before it is handed out.
 */
// @deno-types="@types/pg"
import pg from "pg";

export interface HostCursor {
  /** The URL of the host the next connection goes to. */
  current(): { index: number; url: string };
  /** The connection to host `index` failed: move on, unless another did already. */
  failed(index: number): void;
}

export function hostCursor(hostUrls: readonly string[]): HostCursor {
  let index = 0;
  return {
    current: () => ({ index, url: hostUrls[index] }),
    failed(from) {
      if (index === from) index = (from + 1) % hostUrls.length;
    },
  };
}

/** A read-only server: refused as a connection, so the cursor moves on. */
export class StandbyReachedError extends Error {
  /** SQLSTATE read_only_sql_transaction: what a write on it would have said. */
  readonly code = "25006";

  constructor(where: string) {
    super(`${where} is a standby (in recovery): it cannot take writes`);
    this.name = "StandbyReachedError";
  }
}

/** The pg.Client class a pool makes its connections with, following `cursor`. */
export function failoverClient(cursor: HostCursor): typeof pg.Client {
  return class FailoverClient extends pg.Client {
    readonly hostIndex: number;

    constructor(config: pg.ClientConfig) {
      const { index, url } = cursor.current();
      // pg-pool keeps the password non-enumerable: a spread would drop it.
      super({ ...config, password: config.password, connectionString: url });
      this.hostIndex = index;
    }

    // pg-pool connects with a callback; a failed connection moves the cursor on.
    override connect(): Promise<pg.Client>;
    override connect(callback: (error: Error) => void): void;
    override connect(callback?: (error: Error) => void): Promise<pg.Client> | void {
      if (!callback) {
        return super.connect().catch((error: Error) => {
          cursor.failed(this.hostIndex);
          throw error;
        });
      }
      super.connect((error: Error) => {
        if (error) cursor.failed(this.hostIndex);
        callback(error);
      });
    }
  };
}

/** The pool's onConnect check: a server in recovery is refused, and the cursor moves on. */
export function requireWritable(cursor: HostCursor, where: string) {
  return async (client: pg.ClientBase): Promise<void> => {
    const { rows } = await client.query("SELECT pg_is_in_recovery() AS standby");
    if (rows[0]?.standby === true) {
      const index = (client as unknown as { hostIndex?: number }).hostIndex;
      cursor.failed(index ?? cursor.current().index);
      throw new StandbyReachedError(where);
    }
  };
}
