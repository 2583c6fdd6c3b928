/**
 * Whether the bucket answers at all, so that a silent or refusing S3 turns
 * into fast "offline" failures (503 storage_offline) instead of requests that
 * each wait out their own timeout and retries.
 *
 * Why not just a shorter request timeout: an S3 call's time to its answer
 * includes sending its body and, for a copy, S3's own work, which can take
 * far longer than a silence should (an 8 MiB part over a slow uplink, a
 * multi-GiB server-side copy). So each call keeps its long bound
 * (--s3-timeout), and silence is judged on the bucket as a whole:
 *
 *   - Everything that waits on the bucket (a request until its answer's
 *     headers, a read of a body as it streams) is "waiting". When something
 *     has waited `silenceMs` and nothing at all has come from the bucket for
 *     as long, the bucket is probed (a HEAD of the bucket, `probeTimeoutMs`).
 *     A request that got no answer (refused, reset, timed out) is probed at
 *     once. Any answer, even an error status, means the bucket is there.
 *   - A probe without an answer takes the bucket offline: everything waiting
 *     is stopped with an "offline" failure, and new calls fail at once,
 *     without touching the network.
 *   - While offline, a call at most every `recheckMs` probes again (the
 *     server's store probe makes one every second); the first answer brings
 *     the bucket back, with no restart and no timer left running.
 *
 * No timer outlives the work: the watchdog runs only while something waits.
 */
import { S3RequestError } from "./s3_errors.ts";

export interface BucketLivenessOptions {
  /** Resolves true when the bucket answered (any status) within the signal's time. */
  probe(signal: AbortSignal): Promise<boolean>;
  /** "bucket <name> at <endpoint>", for messages. */
  where: string;
  /** Waiting this long with nothing from the bucket gets it probed (default 2 s). */
  silenceMs?: number;
  /** Bound of one probe (default 2 s). */
  probeTimeoutMs?: number;
  /** While offline, probes at most this often (default 1 s). */
  recheckMs?: number;
}

export const LIVENESS_DEFAULTS = { silenceMs: 2000, probeTimeoutMs: 2000, recheckMs: 1000 };

/** Something that waits on the bucket, stopped (its `halt` aborted) if the bucket goes silent. */
interface Waiting {
  since: number;
  halt: AbortController;
}

export class BucketLiveness {
  readonly #options: Required<BucketLivenessOptions>;
  readonly #waiting = new Set<Waiting>();
  #lastAnswerAt = performance.now();
  #offline: { since: number; reason: string } | null = null;
  #probing: Promise<boolean> | null = null;
  #lastProbeAt = -Infinity;
  #watchdog: ReturnType<typeof setInterval> | null = null;

  constructor(options: BucketLivenessOptions) {
    this.#options = { ...LIVENESS_DEFAULTS, ...options };
  }

  /** Why the bucket counts as offline, or null while it answers. */
  get offlineReason(): string | null {
    if (this.#offline === null) return null;
    const seconds = Math.round((performance.now() - this.#offline.since) / 1000);
    return `${this.#options.where} has not answered for ${seconds} s (${this.#offline.reason})`;
  }

  /**
   * Before a call: throws the "offline" failure while the bucket is offline,
   * unless this call is the one that probes it again (at most every recheckMs)
   * and the probe gets an answer.
   */
  async admit(): Promise<void> {
    if (this.#offline === null) return;
    const due = performance.now() - this.#lastProbeAt >= this.#options.recheckMs;
    if (due && this.#probing === null && await this.probe()) return;
    throw this.offlineError();
  }

  /** The failure calls get while the bucket is offline. */
  offlineError(): S3RequestError {
    return new S3RequestError("offline", `S3 is offline: ${this.offlineReason}`, {
      status: null,
      code: null,
      retryable: false,
    });
  }

  /** Something heard from the bucket: headers or body bytes. */
  answered(): void {
    this.#lastAnswerAt = performance.now();
    if (this.#offline !== null) this.#offline = null;
  }

  /**
   * Registers `halt` as waiting on the bucket until the returned function is
   * called; if the bucket is found silent meanwhile, `halt` is aborted with
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

  /** Probes the bucket now (or joins the probe under way); offline when it does not answer. */
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
    })().finally(() => this.#probing = null);
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
