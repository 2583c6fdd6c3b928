/**
 * The service's own accept loop: connections are accepted here (from
 * Deno.listen or Deno.listenTls) and each is handed to Deno's HTTP server
 * (serve_connection.ts), so that what Deno.serve cannot do is done here, for
 * plain and TLS listeners alike:
 *
 * - a connection cap (--max-connections): at the cap a new connection takes
 *   the place of the oldest one with no request in flight (one that never
 *   sent a request first), and is closed at once when every one is busy;
 * - a cap per client address (--max-connections-per-client; trusted proxies
 *   are exempt, they carry many clients);
 * - a deadline for the first request head, counted from accept
 *   (--header-timeout), and one for the next head on a kept-alive connection
 *   (--keep-alive-timeout). A request's body is held to --body-min-rate by
 *   the handler;
 * - an answer must keep moving (send_meter.ts: --send-min-rate, the idle
 *   timeout), and at the cap with nothing idle the answer stalled longest
 *   makes room, so clients that never read cannot hold every slot;
 * - accept() failing (EMFILE: out of descriptors; ENFILE, ENOBUFS) never
 *   ends the process: the oldest idle connection is closed to free a
 *   descriptor, and accepting resumes after a back-off (10 ms doubling to 1 s).
 *   EMFILE also shows where the open-file limit is (Deno cannot read it): the
 *   cap drops 128 connections below it, so files still open during a flood.
 *
 * Deadlines are checked by one sweep every 250 ms, not a timer per request.
 * The cost on a kept-alive request is a counter and one `completed` promise.
 */
import type { Logger } from "../kernel/log.ts";
import { serveConnection } from "./serve_connection.ts";
import type { ConnectionHandler, KillSwitch } from "./serve_connection.ts";
import { mostStalled, watchAnswer } from "./send_meter.ts";
import type { SendRule } from "./send_meter.ts";
import { Connection } from "./connection_state.ts";
import type { ConnectionStats } from "./connection_state.ts";

export type { ConnectionStats } from "./connection_state.ts";

export interface ConnectionBounds {
  maxConnections: number;
  maxPerClient: number;
  headerTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** What an answer's body is held to (--body-idle-timeout, --send-min-rate); null: nothing. */
  send: SendRule | null;
}

export interface AcceptLoopOptions {
  bounds: ConnectionBounds;
  handler: ConnectionHandler;
  onError: (error: unknown) => Response | Promise<Response>;
  /** The key a connection counts against for maxPerClient; null: not counted (a trusted proxy). */
  clientKeyOf(remote: Deno.NetAddr): string | null;
  logger: Logger;
}

const SWEEP_INTERVAL_MS = 250;
/** How long after a `Connection: close` answer its connection is closed (the answer is out). */
const CLOSE_AFTER_ANSWER_MS = 500;
const MAX_ACCEPT_BACKOFF_MS = 1_000;
/** Descriptors kept free for files, the database and sockets once the open-file limit showed. */
const DESCRIPTOR_HEADROOM = 128;
/** The fewest connections a learned cap allows. */
const MIN_LEARNED_CAP = 16;
/** Accept errors are logged at most this often (a flood would fill the log otherwise). */
const ACCEPT_ERROR_LOG_INTERVAL_MS = 10_000;

export class AcceptLoop {
  readonly #options: AcceptLoopOptions;
  /** Every open connection. */
  readonly #open = new Set<Connection>();
  /**
   * Those that never sent a request (so none is in flight), in accept order:
   * the first is the one to evict, found without a scan during a flood.
   */
  readonly #waiting = new Set<Connection>();
  readonly #perClient = new Map<string, number>();
  readonly #sweeper: ReturnType<typeof setInterval>;
  #closing = false;
  /** Connections the open-file limit leaves room for; Infinity until it showed (EMFILE). */
  #learnedCap = Infinity;
  #drained: (() => void) | null = null;
  #lastAcceptErrorLog = 0;
  #acceptErrorsUnlogged = 0;
  readonly #stats: ConnectionStats = {
    open: 0,
    accepted: 0,
    refused: 0,
    evicted: 0,
    headerTimeouts: 0,
    keepAliveTimeouts: 0,
    slowReaders: 0,
    acceptErrors: 0,
  };

  constructor(options: AcceptLoopOptions) {
    if (serveConnection === null) throw new Error("this Deno cannot serve accepted connections");
    this.#options = options;
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_INTERVAL_MS);
  }

  get stats(): Readonly<ConnectionStats> {
    return { ...this.#stats, open: this.#open.size };
  }

  /** Accepts on listener until it is closed; several listeners may be served at once. */
  async serve(listener: Deno.Listener): Promise<void> {
    let backoffMs = 0;
    while (!this.#closing) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
        backoffMs = 0;
      } catch (error) {
        if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted) {
          return; // the listener was closed
        }
        // The listener is fine, the process is short of descriptors (or memory): accept() would
        // fail again at once. Free a descriptor if an idle connection holds one, then wait.
        this.#acceptFailed(error);
        if (isOutOfDescriptors(error)) this.#learnDescriptorLimit();
        this.#evictOldestIdle();
        backoffMs = Math.min(backoffMs === 0 ? 10 : backoffMs * 2, MAX_ACCEPT_BACKOFF_MS);
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        continue;
      }
      this.#admit(conn);
    }
  }

  #admit(conn: Deno.Conn): void {
    const { bounds } = this.#options;
    const clientKey = this.#options.clientKeyOf(conn.remoteAddr as Deno.NetAddr);
    const held = clientKey === null ? 0 : this.#perClient.get(clientKey) ?? 0;
    if (
      this.#closing || held >= bounds.maxPerClient ||
      (this.#open.size >= this.#cap && !this.#evictOldestIdle() && !this.#evictStalled())
    ) {
      this.#stats.refused++;
      return closeQuietly(conn);
    }
    const connection = new Connection(clientKey, bounds.headerTimeoutMs);
    this.#open.add(connection);
    this.#waiting.add(connection);
    if (clientKey !== null) this.#perClient.set(clientKey, held + 1);
    this.#stats.accepted++;
    const app = this.#options.handler;
    const answered = () => {
      connection.watch = null;
      if (--connection.inFlight > 0) return;
      connection.deadline = Date.now() + bounds.keepAliveTimeoutMs;
      if (this.#closing || connection.closeWhenAnswered) this.#closeAfterLastAnswer(connection);
    };
    const handler: ConnectionHandler = (request, info) => {
      if (!connection.served) {
        connection.served = true;
        this.#waiting.delete(connection);
      }
      const response = app(request, info);
      if (response instanceof Response) {
        // Answered synchronously: the small-piece cache's prebuilt answer (at most 64 KiB, a
        // GET). Counted done at once, and its keep-alive deadline set by the next sweep: the
        // hottest path pays neither the `completed` promise nor a clock read.
        connection.answeredSince = true;
        return response;
      }
      connection.inFlight++;
      info.completed.then(answered, answered);
      return response.then((answer) =>
        this.#watched(connection, noteClose(connection, request, answer))
      );
    };
    const killSwitch: KillSwitch = {
      addEventListener: (_type, listener) => connection.kill = listener,
    };
    connection.server = serveConnection!(conn, killSwitch, handler, this.#options.onError, noop);
    // A failed TLS handshake or a reset rejects `finished`: the end of one connection, never of
    // the process (an unobserved rejection would be).
    connection.server.finished.catch(noop).finally(() => {
      connection.ended = true;
      this.#release(connection);
    });
  }

  /** The answer, watched by the rule on answers (its body metered, or its end timed). */
  #watched(connection: Connection, answer: Response): Response {
    const { send } = this.#options.bounds;
    if (send === null) return answer;
    const watched = watchAnswer(answer, send, () => this.#underPressure(connection));
    connection.watch = watched.watch;
    return watched.answer;
  }

  #sweep(): void {
    const now = Date.now();
    const nowPrecise = performance.now();
    const { send } = this.#options.bounds;
    for (const connection of this.#open) {
      if (connection.answeredSince) {
        connection.answeredSince = false;
        connection.deadline = now + this.#options.bounds.keepAliveTimeoutMs;
      }
      if (send !== null && connection.watch?.broke(send, nowPrecise)) {
        this.#stats.slowReaders++;
        this.#kill(connection);
        continue;
      }
      if (!connection.idle || connection.deadline > now) continue;
      if (connection.served) this.#stats.keepAliveTimeouts++;
      else this.#stats.headerTimeouts++;
      this.#kill(connection);
    }
  }

  /**
   * Closes the oldest connection with nothing in flight, preferring one that
   * never sent a request (a kept-alive client's next request is worth more);
   * false when every connection is busy.
   */
  #evictOldestIdle(): boolean {
    let victim: Connection | null = this.#waiting.values().next().value ?? null;
    if (victim === null) {
      // Every connection has sent a request: the oldest with none in flight (a scan, but only
      // when no connection is merely waiting).
      for (const connection of this.#open) {
        if (connection.idle) {
          victim = connection;
          break;
        }
      }
    }
    if (victim === null) return false;
    this.#stats.evicted++;
    this.#kill(victim);
    return true;
  }

  /**
   * At the cap with every connection busy: closes the one whose answer has
   * waited longest for its client (send_meter.ts mostStalled); false when none has.
   */
  #evictStalled(): boolean {
    const graceMs = this.#options.bounds.send?.minRate?.graceMs ?? Infinity;
    const victim = mostStalled(this.#open, graceMs, performance.now());
    if (victim === null) return false;
    this.#stats.evicted++;
    this.#stats.slowReaders++;
    this.#kill(victim);
    return true;
  }

  /** Half the connections open, or half of what this connection's client may hold. */
  #underPressure(connection: Connection): boolean {
    if (this.#open.size * 2 >= this.#cap) return true;
    const { clientKey } = connection;
    const held = clientKey === null ? 0 : this.#perClient.get(clientKey) ?? 0;
    return held * 2 >= this.#options.bounds.maxPerClient;
  }

  /** Closes a connection at once (nothing in flight, a stalled answer, or a shutdown's end). */
  #kill(connection: Connection): void {
    if (!connection.ended) {
      try {
        connection.kill?.();
      } catch {
        // Deno closed it already; `finished` is about to settle.
      }
    }
    this.#release(connection);
  }

  #release(connection: Connection): void {
    if (!this.#open.delete(connection)) return;
    this.#waiting.delete(connection);
    const { clientKey } = connection;
    if (clientKey !== null) {
      const left = (this.#perClient.get(clientKey) ?? 1) - 1;
      if (left === 0) this.#perClient.delete(clientKey);
      else this.#perClient.set(clientKey, left);
    }
    if (this.#closing && this.#open.size === 0) this.#drained?.();
  }

  /** The most connections held: --max-connections, or less once the descriptor limit showed. */
  get #cap(): number {
    return Math.min(this.#options.bounds.maxConnections, this.#learnedCap);
  }

  /**
   * Out of descriptors with `open` connections: the process's open-file limit
   * (which Deno cannot read) is that many connections plus what the rest of
   * the server holds. From now on at most DESCRIPTOR_HEADROOM fewer are kept,
   * so that piece files, the database and the uploads' temporary files still
   * open while a flood fills every connection slot.
   */
  #learnDescriptorLimit(): void {
    const cap = Math.max(MIN_LEARNED_CAP, this.#open.size - DESCRIPTOR_HEADROOM);
    if (cap >= this.#cap) return;
    this.#learnedCap = cap;
    this.#options.logger.warn(
      "out of file descriptors: connections are capped below the open-file limit from now on",
      { maxConnections: cap, keptFree: DESCRIPTOR_HEADROOM },
    );
    while (this.#open.size > cap && this.#evictOldestIdle()) { /* make room for the files */ }
  }

  #acceptFailed(error: unknown): void {
    this.#stats.acceptErrors++;
    this.#acceptErrorsUnlogged++;
    const now = Date.now();
    if (now - this.#lastAcceptErrorLog < ACCEPT_ERROR_LOG_INTERVAL_MS) return;
    this.#options.logger.warn("cannot accept connections; closing idle ones and retrying", {
      error: error instanceof Error ? error.message : String(error),
      failures: this.#acceptErrorsUnlogged,
      open: this.#open.size,
    });
    this.#lastAcceptErrorLog = now;
    this.#acceptErrorsUnlogged = 0;
  }

  /**
   * Stops accepting (the caller closes its listeners): idle connections close
   * now, the others once their last answer is sent, and whatever is left after
   * graceMs is closed anyway. False if some had to be. (Deno's own graceful
   * shutdown would cut HTTP/1.1 request bodies still being read.)
   */
  async shutdown(graceMs: number): Promise<boolean> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    // Settles once each connection is really closed, its last answer flushed.
    const closedForGood = Promise.all(
      [...this.#open].map((connection) => connection.server?.finished.catch(noop)),
    );
    const drained = new Promise<void>((resolve) => this.#drained = resolve);
    for (const connection of [...this.#open]) if (connection.idle) this.#kill(connection);
    if (this.#open.size === 0) this.#drained?.();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => timer = setTimeout(resolve, graceMs, "late"));
    try {
      if (await Promise.race([drained.then(() => closedForGood), late]) !== "late") return true;
      for (const connection of [...this.#open]) this.#kill(connection);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A connection whose last answer went out, while shutting down or after an
   * answer that said `Connection: close`: a forced close right after
   * `completed` can lose the answer's last bytes. While draining it closes
   * gracefully (HTTP/1.1 at once, HTTP/2 with a GOAWAY).
   */
  #closeAfterLastAnswer(connection: Connection): void {
    if (this.#closing) {
      connection.server?.shutdown().catch(noop);
      this.#release(connection); // the drain counts it done; its `finished` is awaited apart
      return;
    }
    // Deno's graceful close waits for the unread body, and takes the connection's resource so
    // that no forced close can follow: the sweep closes it instead, once the answer is out.
    connection.deadline = Date.now() + CLOSE_AFTER_ANSWER_MS;
  }
}

/**
 * An answer that says `Connection: close`, or one sent before the request's
 * body was read (an early 413 or 401), ends its connection once sent: the
 * unread body stands where the next request would, and Deno alone keeps such
 * a socket until the client closes it.
 */
function noteClose(connection: Connection, request: Request, response: Response): Response {
  const unreadBody = request.method !== "GET" && request.method !== "HEAD" &&
    request.body !== null && !request.bodyUsed;
  if (unreadBody || response.headers.get("connection") === "close") {
    connection.closeWhenAnswered = true;
  }
  return response;
}

/** EMFILE: this process is out of descriptors (ENFILE, the whole system's, is not ours to learn). */
function isOutOfDescriptors(error: unknown): boolean {
  return error instanceof Error && /\(os error 24\)|too many open files/i.test(error.message) &&
    !/in system/i.test(error.message);
}

function noop(): void {}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
