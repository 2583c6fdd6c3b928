/**
 * Counts requests in flight so shutdown can wait for them. Deno's
 * server.shutdown() stops reading request bodies at once, so uploads must be
 * drained before it is called, not by it.
 */
export class InFlight {
  #count = 0;
  #idle: PromiseWithResolvers<void> | null = null;

  get count(): number {
    return this.#count;
  }

  async track<T>(fn: () => Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await fn();
    } finally {
      this.#count--;
      if (this.#count === 0) this.#idle?.resolve();
    }
  }

  /** Resolves when nothing is in flight. */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    this.#idle ??= Promise.withResolvers<void>();
    const idle = this.#idle.promise;
    return idle.finally(() => this.#idle = null);
  }
}
