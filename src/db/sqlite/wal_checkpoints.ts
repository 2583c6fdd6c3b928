/**
 * The WAL's checkpoints, run off the serving thread. Why: SQLite copies the
 * WAL back into the database file (and waits for the disk, twice) inside the
 * commit that takes the WAL past 1000 pages, on the connection that
 * committed; ours is the one thread that serves every request. Indexing a
 * CAR of a million blocks crossed that line about a hundred times, each a
 * stall of 50 to 200 ms (more on a busy disk).
 *
 * So the serving connection checkpoints only past FALLBACK_PAGES (should the
 * worker be gone), and a Worker with its own connection to the same file
 * runs a PASSIVE checkpoint every INTERVAL_MS: PASSIVE takes no lock a
 * writer or reader waits for, and copies what no reader still needs, so the
 * WAL restarts from its beginning as before. A worker that cannot open the
 * file gives the checkpoints back to the serving connection.
 */
import type { Database } from "./database.ts";

/** SQLite's own default: where the serving connection checkpoints without the worker. */
const INLINE_PAGES = 1000;
/** Where it checkpoints with one: only if the worker fell behind by far (or died). */
export const FALLBACK_PAGES = 64 * INLINE_PAGES;
/** How often the worker checkpoints: a busy writer adds a few MiB of WAL in between. */
const INTERVAL_MS = 200;
/** How long stop() waits for the worker to close its connection. */
const STOP_WAIT_MS = 5000;

const WORKER_SOURCE = `
import { DatabaseSync } from "node:sqlite";
let db = null;
let timer;
self.onmessage = ({ data }) => {
  if (data.open !== undefined) {
    try {
      db = new DatabaseSync(data.open);
      const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
      timer = setInterval(() => {
        try {
          checkpoint.get();
        } catch {
          // Busy or a passing I/O error: the next turn tries again.
        }
      }, data.intervalMs);
      self.postMessage({ opened: true });
    } catch (error) {
      self.postMessage({ opened: false, error: String(error) });
    }
  } else if (data.close) {
    clearInterval(timer);
    try {
      db?.close();
    } finally {
      self.postMessage({ closed: true });
    }
  }
};
`;

export interface WalCheckpointsOptions {
  /** How often the worker checkpoints (tests shorten or lengthen it). */
  intervalMs?: number;
}

export class WalCheckpoints {
  readonly #db: Database;
  readonly #worker: Worker;
  readonly #opened: Promise<boolean>;
  #closed: Promise<void> | null = null;

  /** Starts the worker for the database `db` has open at `path`; the serving connection stops checkpointing. */
  constructor(db: Database, path: string, options: WalCheckpointsOptions = {}) {
    this.#db = db;
    db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_PAGES}`);
    this.#worker = new Worker(
      `data:application/javascript,${encodeURIComponent(WORKER_SOURCE)}`,
      { type: "module" },
    );
    this.#opened = new Promise<boolean>((resolve) => {
      this.#worker.onmessage = ({ data }) => resolve(data.opened === true);
      this.#worker.onerror = (event) => {
        event.preventDefault();
        resolve(false);
      };
    }).then((opened) => {
      if (!opened) this.#giveBack();
      return opened;
    });
    this.#worker.postMessage({ open: path, intervalMs: options.intervalMs ?? INTERVAL_MS });
  }

  /** Whether the worker runs the checkpoints (false: it could not, the serving connection does). */
  running(): Promise<boolean> {
    return this.#opened;
  }

  /** Closes the worker's connection, then the worker; the serving connection checkpoints again. */
  stop(): Promise<void> {
    this.#closed ??= this.#stop();
    return this.#closed;
  }

  async #stop(): Promise<void> {
    if (await this.#opened) {
      const closed = new Promise<void>((resolve) => {
        this.#worker.onmessage = () => resolve();
        this.#worker.onerror = (event) => {
          event.preventDefault();
          resolve();
        };
      });
      this.#worker.postMessage({ close: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => timer = setTimeout(resolve, STOP_WAIT_MS)),
      ]);
      clearTimeout(timer);
    }
    this.#worker.terminate();
    this.#giveBack();
  }

  #giveBack(): void {
    if (this.#db.isOpen) this.#db.exec(`PRAGMA wal_autocheckpoint = ${INLINE_PAGES}`);
  }
}
