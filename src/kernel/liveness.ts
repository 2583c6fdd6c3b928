/**
 * Whether a backend (the bucket, the database) answers at all, so that one
 * that is silent or refuses turns into fast "offline" failures (503
 * storage_offline) instead of requests that each wait out their own timeout
 * and retries.
 *
 * Why not just a shorter timeout per call: a call's time to its answer may
 * rightly be long (sending an upload's part over a slow uplink, S3's own
 * copy of a large piece, a row lock another instance holds), far longer than
 * a silence should be. So each call keeps its own bound, and silence is
 * judged on the backend as a whole:
 *
 *   - Everything that waits on the backend (a request until its answer, a
 *     read of a body as it streams, a query) is "waiting". When something
 *     has waited `silenceMs` and nothing at all has come from the backend
 *     for as long, the backend is probed (`probe`, bounded by
 *     `probeTimeoutMs`). A call that got no answer (refused, reset, timed
 *     out) gets it probed at once. Any answer, even an error, means the
 *     backend is there.
 *   - A probe without an answer takes the backend offline: everything waiting
 *     is stopped (its `halt` aborted with the offline failure), and new calls
 *     fail at once, without touching the network.
 *   - While offline, a call at most every `recheckMs` probes again (the
 *     server's store probe and the heartbeat make one every second or so);
 *     the first answer brings the backend back, with no restart and no timer
 *     left running.
 *
 * No timer outlives the work: the watchdog runs only while something waits.
 */

export interface LivenessOptions {
  /** Resolves true when the backend answered (any answer) before the signal aborted. */
  probe(signal: AbortSignal): Promise<boolean>;
  /** "bucket <name> at <endpoint>", "PostgreSQL at <host>", for messages. */
  where: string;
  /** The failure calls get while the backend is offline, given why. */
  failure(message: string): Error;
  /** Waiting this long with nothing from the bucket gets it probed (default 2 s). */
  silenceMs?: number;
  /** Bound of one probe (default 2 s). */
  probeTimeoutMs?: number;
  /** While offline, probes at most this often (default 1 s). */
  recheckMs?: number;
}

export const LIVENESS_DEFAULTS = { silenceMs: 2000, probeTimeoutMs: 2000, recheckMs: 1000 };

/** Something that waits on the backend, stopped (its `halt` aborted) if it goes silent. */
interface Waiting {
  since: number;
  halt: AbortController;
}

export class Liveness {
  readonly #options: Required<LivenessOptions>;
  readonly #waiting = new Set<Waiting>();
  #lastAnswerAt = performance.now();
  #offline: { since: number; reason: string } | null = null;
  #probing: Promise<boolean> | null = null;
  #lastProbeAt = -Infinity;
  #watchdog: ReturnType<typeof setInterval> | null = null;

  constructor(options: LivenessOptions) {
    this.#options = { ...LIVENESS_DEFAULTS, ...options };
  }

  /** Why the backend counts as offline, or null while it answers. */
  get offlineReason(): string | null {
    if (this.#offline === null) return null;
    const seconds = Math.round((performance.now() - this.#offline.since) / 1000);
    return `${this.#options.where} has not answered for ${seconds} s (${this.#offline.reason})`;
  }

  /**
   * Before a call: throws the offline failure while the backend is offline,
   * unless this call is the one that probes it again (at most every recheckMs)
   * and the probe gets an answer.
   */
  async admit(): Promise<void> {
    if (this.#offline === null) return;
    const due = performance.now() - this.#lastProbeAt >= this.#options.recheckMs;
    if (due && this.#probing === null && await this.probe()) return;
    throw this.offlineError();
  }

  /** The failure calls get while the backend is offline. */
  offlineError(): Error {
    return this.#options.failure(this.offlineReason ?? `${this.#options.where} is offline`);
  }

  /** Something heard from the backend: an answer, a chunk of a body. */
  answered(): void {
    this.#lastAnswerAt = performance.now();
    if (this.#offline !== null) this.#offline = null;
  }

  /**
   * Registers `halt` as waiting on the backend until the returned function is
   * called; if the backend is found silent meanwhile, `halt` is aborted with
   * the offline failure.
   */
  waiting(halt: AbortController): () => void {
    const entry = { since: performance.now(), halt };
    this.#waiting.add(entry);
    this.#watchdog ??= setInterval(() => this.#watch(), Math.min(250, this.#options.silenceMs));
    return () => {
      this.#waiting.delete(entry);
      if (this.#waiting.size === 0 && this.#watchdog !== null) {
        clearInterval(this.#watchdog);
        this.#watchdog = null;
      }
    };
  }

  /** A call got no answer (refused, reset, timed out): probe now, unless one is under way. */
  suspect(reason: string): void {
    if (this.#probing === null) void this.probe(reason);
  }

  /** Probes the backend now (or joins the probe under way); offline when it does not answer. */
  probe(reason = "it did not answer a probe"): Promise<boolean> {
    return this.#probing ??= (async () => {
      this.#lastProbeAt = performance.now();
      let answered = false;
      try {
        answered = await this.#options.probe(AbortSignal.timeout(this.#options.probeTimeoutMs));
      } catch {
        answered = false;
      }
      if (answered) this.answered();
      else this.#goOffline(reason);
      return answered;
    })().finally(() => {
      // Counted from its end: a probe longer than recheckMs must not make every call a probe.
      this.#lastProbeAt = performance.now();
      this.#probing = null;
    });
  }

  #goOffline(reason: string): void {
    this.#offline ??= { since: performance.now(), reason };
    const error = this.offlineError();
    for (const entry of this.#waiting) entry.halt.abort(error);
  }

  /** While something waits: a silence as long as silenceMs gets the bucket probed. */
  #watch(): void {
    const now = performance.now();
    const { silenceMs } = this.#options;
    if (now - this.#lastAnswerAt < silenceMs) return;
    const stuck = [...this.#waiting].filter((entry) => now - entry.since >= silenceMs);
    if (stuck.length === 0) return;
    if (this.#offline === null) {
      this.suspect(`nothing came for ${Math.round((now - this.#lastAnswerAt) / 1000)} s`);
      return;
    }
    // Already known offline: what has waited this long will not be answered either.
    const error = this.offlineError();
    for (const entry of stuck) entry.halt.abort(error);
  }
}
