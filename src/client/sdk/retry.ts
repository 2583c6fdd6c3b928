/**
 * When a failed request is worth repeating, and how long to wait first.
 *
 * Repeated: network errors (no answer), 5xx, 408, and 429/503 whose
 * Retry-After is short. Never another 4xx: a 429 quota_exceeded whose
 * Retry-After runs until UTC midnight must reach the caller at once, not after
 * hours of waiting. Requests that are not safe to repeat blindly (a signup
 * mints a token, an extension adds a term) are repeated only after answers
 * that say nothing was done: 408, 429 and 503 (decided before the body was
 * used, or rolled back). The wait is exponential backoff with jitter, and
 * never shorter than the server's Retry-After.
 */
import { sleep } from "../../kernel/clock.ts";
import type { RetryOptions } from "./types.ts";
import { NetworkError, StorageError } from "./errors.ts";

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** [0, 1); replaceable for tests. */
  random: () => number;
}

export function retryPolicyOf(options: RetryOptions = {}): RetryPolicy {
  const attempts = options.attempts ?? 5;
  if (!Number.isSafeInteger(attempts) || attempts < 1) {
    throw new RangeError(`retry.attempts must be a whole number, at least 1 (got ${attempts})`);
  }
  return {
    attempts,
    baseDelayMs: Math.max(0, options.baseDelayMs ?? 250),
    maxDelayMs: Math.max(0, options.maxDelayMs ?? 30_000),
    random: Math.random,
  };
}

/** Whether repeating the request after a lost answer could do its work twice. */
export type Repeatable = "safe" | "only-if-not-done";

/**
 * The wait before attempt `attempt + 1` (attempt counts from 1), or null when
 * the error must be thrown now.
 */
export function retryDelayMs(
  error: unknown,
  attempt: number,
  policy: RetryPolicy,
  repeatable: Repeatable,
): number | null {
  if (attempt >= policy.attempts) return null;
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = backoff / 2 + policy.random() * (backoff / 2);
  if (error instanceof NetworkError) return repeatable === "safe" ? jittered : null;
  if (!(error instanceof StorageError)) return null;
  const { status, retryAfterSeconds } = error;
  // Used up until the day's reset: whatever Retry-After says, another try now cannot pass.
  if (error.code === "quota_exceeded") return null;
  const retryAfterMs = retryAfterSeconds === undefined ? null : retryAfterSeconds * 1000;
  const nothingDone = status === 408 || status === 429 || status === 503;
  if (!nothingDone && !(status >= 500 && repeatable === "safe")) return null;
  if (status === 429 && retryAfterMs === null) return null;
  if (retryAfterMs !== null) {
    if (retryAfterMs > policy.maxDelayMs) return null;
    return Math.max(retryAfterMs, jittered);
  }
  return jittered;
}

/**
 * Runs `attempt` until it succeeds, the error is final, or the attempts run
 * out; the last error is thrown. A fetch that throws TypeError should be
 * turned into NetworkError by the attempt itself so it is recognised here.
 */
export async function withRetry<T>(
  run: (attempt: number) => Promise<T>,
  options: {
    policy: RetryPolicy;
    repeatable: Repeatable;
    signal?: AbortSignal;
    onRetry?: (error: unknown, delayMs: number) => void;
  },
): Promise<T> {
  for (let attempt = 1;; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await run(attempt);
    } catch (error) {
      options.signal?.throwIfAborted();
      const delay = retryDelayMs(error, attempt, options.policy, options.repeatable);
      if (delay === null) {
        if (error instanceof NetworkError && attempt > 1) {
          throw new NetworkError(`${error.message} (after ${attempt} attempts)`, {
            cause: error.cause,
            attempts: attempt,
          });
        }
        throw error;
      }
      options.onRetry?.(error, delay);
      await sleep(delay, options.signal);
    }
  }
}

/**
 * Seconds to wait from a Retry-After header: delta-seconds or an HTTP date
 * (RFC 9110 §10.2.3). Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, nowMs = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - nowMs) / 1000));
}
