/**
 * A sliding-window limit per key (signups per client IP per hour). Slots are
 * taken before the work and given back if the work fails, so concurrent
 * requests cannot overshoot and rejected input never counts. In memory: a
 * restart forgets recent signups, which only ever errs toward letting
 * someone in.
 */
import type { Clock } from "../kernel/clock.ts";
import { releaseOnce } from "./release_once.ts";

export interface WindowLimitOptions {
  limit: number;
  windowMs: number;
  clock: Clock;
}

export type AcquireResult =
  | { ok: true; release(): void }
  | { ok: false; retryAfterSeconds: number };

export class WindowLimit {
  readonly #options: WindowLimitOptions;
  readonly #hits = new Map<string, number[]>();

  constructor(options: WindowLimitOptions) {
    this.#options = options;
  }

  acquire(key: string): AcquireResult {
    const now = this.#options.clock.now();
    const since = now - this.#options.windowMs;
    const hits = (this.#hits.get(key) ?? []).filter((t) => t > since);
    if (hits.length >= this.#options.limit) {
      this.#hits.set(key, hits);
      const retryAfterMs = hits[0] + this.#options.windowMs - now;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
    }
    hits.push(now);
    this.#hits.set(key, hits);
    this.#forgetIdleKeys(since);
    return {
      ok: true,
      release: releaseOnce(() => {
        const list = this.#hits.get(key);
        const i = list?.lastIndexOf(now) ?? -1;
        if (list && i !== -1) list.splice(i, 1);
      }),
    };
  }

  /** Keeps memory bounded by the number of recently active keys. */
  #forgetIdleKeys(since: number): void {
    if (this.#hits.size < 10_000) return;
    for (const [key, hits] of this.#hits) {
      if (hits.every((t) => t <= since)) this.#hits.delete(key);
    }
  }
}
