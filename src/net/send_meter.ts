/**
 * How fast an answer's body leaves for its client, for the accept loop's
 * rule on answers (accept_loop.ts): an answer must keep moving. A client
 * that does not read holds its connection, its slot in the caps and the
 * answer's open file for as long as it likes; with a handful of addresses
 * that is every slot (before: 40 unread GETs from 4 addresses kept every new
 * client out for minutes).
 *
 * The body is handed to Deno's HTTP server a chunk at a time, pulled as the
 * socket takes the previous one; the time between handing a chunk over and
 * the next pull is the client's, the time the body takes to produce a chunk
 * is the server's (a slow disk is not the client's fault). The rule mirrors
 * the one on request bodies (kernel/streams/read_watchdog.ts): nothing taken
 * for the idle timeout, or, once the grace is over, less than the minimum
 * rate on average over the client's time.
 */

import { sentFromResource, streamedBody } from "./serve_connection.ts";

/** An answer whose last chunk waits this long for its client may make room for a newcomer. */
export const STALLED_MS = 1_000;

/** The rule an answer is held to (the same shape as a request body's MinBodyRate). */
export interface SendRule {
  /** A chunk not taken for this long: the client stopped reading. */
  idleMs: number;
  /** null: no minimum rate. */
  minRate: { bytesPerSecond: number; graceMs: number } | null;
}

export type SendVerdict = "idle" | "slow";

export class SendMeter {
  /** Bytes handed to the socket's writer. */
  sent = 0;
  /** Time the client kept the server waiting, in chunks it has taken. */
  #waitedMs = 0;
  /** When the chunk the client has not taken yet was handed over; null: none waits. */
  #handedAt: number | null = null;

  /**
   * The body, handed over a chunk at a time as it is pulled, and no more than
   * `length` bytes of it (the answer's Content-Length): a body may run past
   * its answer's length, which Deno's server cuts (driver.ts OpenOptions),
   * and this stream stands where the server would have cut.
   */
  wrap(body: ReadableStream<Uint8Array>, length = Infinity): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (this.#handedAt !== null) {
          this.#waitedMs += performance.now() - this.#handedAt;
          this.#handedAt = null;
        }
        const { done, value } = await reader.read();
        if (done) return controller.close();
        const room = length - this.sent;
        const chunk = value.byteLength > room ? value.subarray(0, room) : value;
        this.sent += chunk.byteLength;
        if (chunk.byteLength > 0) controller.enqueue(chunk);
        this.#handedAt = performance.now();
        if (this.sent >= length) {
          controller.close();
          await reader.cancel();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
  }

  /** How long the chunk handed over last has waited for the client (0: none waits). */
  stalledMs(now = performance.now()): number {
    return this.#handedAt === null ? 0 : now - this.#handedAt;
  }

  /** Whether the answer broke the rule, and how. */
  verdict(rule: SendRule, now = performance.now()): SendVerdict | null {
    const stalled = this.stalledMs(now);
    if (stalled >= rule.idleMs) return "idle";
    if (rule.minRate === null || rule.minRate.bytesPerSecond <= 0) return null;
    const { bytesPerSecond, graceMs } = rule.minRate;
    const allowedMs = Math.max(graceMs, (this.sent * 1000) / bytesPerSecond);
    return this.#waitedMs + stalled >= allowedMs ? "slow" : null;
  }
}

/**
 * An answer as the rule watches it: metered (its body handed over through a
 * SendMeter), or, for a body Deno sends from a file while the server is not
 * under pressure (metering it costs three times the CPU), only timed: it must
 * end within what the minimum rate allows for its length (at least the grace).
 */
export class AnswerWatch {
  constructor(
    readonly meter: SendMeter | null,
    readonly startedAt: number,
    readonly endBy: number,
  ) {}

  /** Whether the answer broke the rule by `now`. */
  broke(rule: SendRule, now: number): boolean {
    return this.meter !== null ? this.meter.verdict(rule, now) !== null : this.endBy <= now;
  }
}

/** The answer to send, and its watch (null: nothing to watch, a static or empty body). */
export function watchAnswer(
  answer: Response,
  rule: SendRule,
  underPressure: () => boolean,
): { answer: Response; watch: AnswerWatch | null } {
  const body = streamedBody(answer);
  if (body === null) return { answer, watch: null }; // nothing, or bytes Deno sends whole
  const now = performance.now();
  const length = Number(answer.headers.get("content-length") ?? NaN);
  if (sentFromResource(body) && !underPressure()) {
    const rate = rule.minRate?.bytesPerSecond ?? 0;
    const allowedMs = Number.isFinite(length) && rate > 0
      ? Math.max(rule.minRate!.graceMs, (length * 1000) / rate)
      : Infinity;
    return { answer, watch: new AnswerWatch(null, now, now + allowedMs) };
  }
  const meter = new SendMeter();
  const metered = new Response(meter.wrap(body, Number.isFinite(length) ? length : Infinity), {
    status: answer.status,
    statusText: answer.statusText,
    headers: answer.headers,
  });
  return { answer: metered, watch: new AnswerWatch(meter, now, Infinity) };
}

/**
 * The connection whose answer waited longest for its client: a metered one
 * stalled STALLED_MS at least; else (an unmetered one cannot say whether it
 * moves) the oldest unmetered one past the grace; null when none.
 */
export function mostStalled<T extends { watch: AnswerWatch | null }>(
  connections: Iterable<T>,
  graceMs: number,
  now: number,
): T | null {
  let stalled: T | null = null;
  let longest = STALLED_MS;
  let oldest: T | null = null;
  for (const connection of connections) {
    const watch = connection.watch;
    if (watch === null) continue;
    const waited = watch.meter?.stalledMs(now) ?? 0;
    if (waited >= longest) {
      stalled = connection;
      longest = waited;
    }
    if (
      watch.meter === null && now - watch.startedAt >= graceMs &&
      watch.startedAt < (oldest?.watch?.startedAt ?? Infinity)
    ) {
      oldest = connection;
    }
  }
  return stalled ?? oldest;
}
