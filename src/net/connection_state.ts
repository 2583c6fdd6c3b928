/**
 * What the accept loop (accept_loop.ts) keeps of each connection, and what
 * it reports of all of them: kept apart so the loop's file holds the loop.
 */
import type { AnswerWatch } from "./send_meter.ts";

/** What the loop has done, for /healthz and /metrics. */
export interface ConnectionStats {
  open: number;
  accepted: number;
  /** Closed at accept: the cap with every connection busy, or the client's own cap. */
  refused: number;
  /** Closed to make room for a new connection at the cap, or to free a descriptor. */
  evicted: number;
  headerTimeouts: number;
  keepAliveTimeouts: number;
  /** Closed because their client stopped taking an answer, or took it too slowly. */
  slowReaders: number;
  acceptErrors: number;
}

export class Connection {
  /** Requests whose answer is not fully sent yet. */
  inFlight = 0;
  /** Whether a request head ever arrived: those that never sent one are evicted first. */
  served = false;
  /** A synchronous answer went out since the last sweep (which then sets the deadline). */
  answeredSince = false;
  deadline: number;
  ended = false;
  /** An answer said `Connection: close`: the connection ends once nothing is in flight. */
  closeWhenAnswered = false;
  kill: (() => void) | null = null;
  server: Deno.HttpServer<Deno.NetAddr> | null = null;
  /** The answer being sent, as the rule on answers watches it; null: none, or not watched. */
  watch: AnswerWatch | null = null;

  constructor(readonly clientKey: string | null, headerTimeoutMs: number) {
    this.deadline = Date.now() + headerTimeoutMs;
  }

  get idle(): boolean {
    return this.inFlight === 0;
  }
}
