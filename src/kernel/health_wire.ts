/**
 * What GET /healthz answers, apart from wire.ts (which would pass its size):
 * the service's state, its storage and database, the wallet tier's chain,
 * garbage collection, the background jobs and the hand-off to a storage
 * provider. Types only, importing nothing, shared with the client side as
 * wire.ts is.
 */

export interface Health {
  status: "ok" | "degraded";
  storage: { ok: boolean; source: string; detail: string };
  database: DatabaseHealth;
  digests: { backlog: number; failures: number };
  uploads: { inFlight: number };
  memory: { rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number };
  /**
   * The longest time between two ticks of a 10 ms timer over the last 30 to 60 s, in ms: about
   * 10 with the loop free; a synchronous stretch of N ms shows as at least N.
   */
  eventLoop: { maxDelayMs: number };
  wallet: WalletHealth;
  gc: GcHealth;
  /** The work this server runs by itself, every so often (the jobs that are on). */
  jobs: JobHealth[];
  /** With --handoff pdp: the storage provider, whether it answers, pieces by state. */
  handoff?: HandoffHealth;
}

/** One background job of this server (a sweep, a watch, a probe), as /healthz reports it. */
export interface JobHealth {
  name: string;
  /** From the end of one run to the start of the next. */
  intervalSeconds: number;
  /** Whether it runs now. */
  running: boolean;
  /** The last run that ended; null: none yet. */
  lastRun: JobRun | null;
  /** When the next run is due; null while one runs. */
  nextRunAt: string | null;
}

export interface JobRun {
  startedAt: string;
  finishedAt: string;
  /** False when it failed; error says why. */
  ok: boolean;
  error: string | null;
}

/** Garbage collection of pieces no deal wants, as /healthz reports it. */
export interface GcHealth {
  /** Hours between this server's own sweeps; 0 when it runs none (`main.ts gc` may). */
  intervalHours: number;
  /** Days a piece is kept after its last deal ended. */
  graceDays: number;
  /** Whether a sweep is running in this server now. */
  running: boolean;
  /** The last sweep that finished, by any instance or `main.ts gc`; null: none yet. */
  lastSweep: GcSweepSummary | null;
}

export interface GcSweepSummary {
  startedAt: string;
  finishedAt: string;
  /** Pieces whose bytes it removed, and their bytes. */
  removedPieces: number;
  removedBytes: number;
  /** Objects no metadata named that it removed. */
  removedOrphans: number;
}

/** The metadata database as /healthz reports it (backends/metadata.ts answers it). */
export interface DatabaseHealth {
  ok: boolean;
  /** False when the database lives in memory because no data directory is bound. */
  persistent: boolean;
  /** Where the metadata lives: SQLite in the data directory, or a shared PostgreSQL. */
  backend: "sqlite" | "postgres";
  detail: string;
}

/** The wallet tier's chain as /healthz reports it (its state never makes the server degraded). */
export interface WalletHealth {
  enabled: boolean;
  ok: boolean;
  chainId: number | null;
  rpcChainId: number | null;
  lastError: string | null;
  lastSuccessAt: string | null;
}

/** The hand-off in /healthz. */
export interface HandoffHealth {
  provider: string;
  /** Whether the provider answered the last run's requests. */
  answering: boolean;
  lastAnswerAt: string | null;
  /** The last failure to reach it, while it lasts. */
  problem: string | null;
  /** Pieces by state. */
  pieces: Record<string, number>;
  oldestQueuedAt: string | null;
}
