/**
 * Why: Curio punishes a client that keeps adding pieces to a data set that
 * does not exist (or was terminated): the fifth such add within a minute is
 * itself answered 429, and the client's IP is then refused on every /pdp
 * route for five minutes, 429 with Retry-After (filecoin-project/curio:
 * pdp/ip_offense_throttle.go, OffenseBadDataSetAdd). Curio keys this by
 * client IP, not by wallet address; so does the fake.
 */
import type { FakePdpOptions } from "./config.ts";

interface OffenseState {
  hits: number;
  windowStart: number;
  blockedUntil: number;
}

export interface Blocked {
  retryAfterSeconds: number;
  reason: string;
}

export const BAD_DATA_SET_ADD_REASON = "too many requests for unavailable data sets";

export class OffenseThrottle {
  readonly #options: FakePdpOptions;
  readonly #state = new Map<string, OffenseState>();

  constructor(options: FakePdpOptions) {
    this.#options = options;
  }

  /** The block in force for this IP, if any. */
  blocked(ip: string): Blocked | null {
    const state = this.#state.get(ip);
    const now = this.#options.now();
    if (!state || now >= state.blockedUntil) return null;
    return this.#answer(state.blockedUntil - now);
  }

  /** Counts one offense; a block when this one reaches the limit (or one is in force). */
  record(ip: string): Blocked | null {
    const now = this.#options.now();
    let state = this.#state.get(ip);
    if (!state) {
      state = { hits: 0, windowStart: now, blockedUntil: 0 };
      this.#state.set(ip, state);
    }
    if (now < state.blockedUntil) return this.#answer(state.blockedUntil - now);
    if (now - state.windowStart >= this.#options.offenseWindowMs) {
      state.hits = 0;
      state.windowStart = now;
    }
    state.hits++;
    if (state.hits < this.#options.offenseHits) return null;
    state.blockedUntil = now + this.#options.offenseBlockMs;
    state.hits = 0;
    state.windowStart = now;
    return this.#answer(this.#options.offenseBlockMs);
  }

  #answer(remainingMs: number): Blocked {
    return {
      retryAfterSeconds: Math.max(1, Math.floor(remainingMs / 1000)),
      reason: BAD_DATA_SET_ADD_REASON,
    };
  }
}
