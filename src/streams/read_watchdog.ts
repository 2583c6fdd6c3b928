/**
 * Notices a body that stops sending: fires once if a read has been waiting
 * for idleMs (uploads, JSON bodies, bodies hashed for their piece cid). One timer per upload, re-armed lazily, instead of a timer and a
 * race per chunk (an upload has thousands of chunks).
 */
export class ReadWatchdog {
  #fired = false;
  readonly #idleMs: number;
  #readingSince: number | null = null;
  #timer: ReturnType<typeof setTimeout>;

  /** onIdle runs once, when a read has waited idleMs; it should end that read. */
  constructor(idleMs: number, onIdle: () => void) {
    this.#idleMs = idleMs;
    const check = () => {
      const waited = this.#readingSince === null ? 0 : performance.now() - this.#readingSince;
      if (waited >= idleMs) {
        this.#fired = true;
        onIdle();
      } else {
        this.#timer = setTimeout(check, idleMs - waited);
      }
    };
    this.#timer = setTimeout(check, idleMs);
  }

  get fired(): boolean {
    return this.#fired;
  }

  /** Marks the start (true) or end (false) of a read. */
  reading(active: boolean): void {
    this.#readingSince = active ? performance.now() : null;
  }

  get idleMs(): number {
    return this.#idleMs;
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}
