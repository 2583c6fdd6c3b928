/**
 * A signing key re-read from where it is kept (a file, the database): on a
 * timer, so a `rotate-key` reaches a running server without a restart, and
 * when a token is signed by a key not known yet (another instance, or the
 * rotation, may be ahead), at most once a second so bad tokens cannot make
 * every request read it. The HMAC key (hmac_key.ts) and the RSA key ring
 * (rsa_keys.ts) are both kept this way.
 */

/** Re-reads the key no more often than this when a signature fails to verify. */
const RELOAD_ON_FAILURE_MIN_INTERVAL_MS = 1000;
/**
 * reloadFresh reads no more often than this: a read is one small SELECT (or
 * file read), so ten a second cost nothing, and a caller waits 0.1 s at most.
 */
const FRESH_MIN_INTERVAL_MS = 100;

export abstract class ReloadingKey {
  #text: string;
  #version = 1;
  #lastReloadMs = 0;
  /** The shared read of reloadFresh, while it has not begun. */
  #next: Promise<boolean> | null = null;
  /** Reads the key's text where it is kept; null when it is kept nowhere (in memory only). */
  readonly #read: (() => Promise<string>) | null;

  protected constructor(text: string, read: (() => Promise<string>) | null) {
    this.#text = text;
    this.#read = read;
  }

  /** Takes a changed text in: parses it, and throws (keeping the key in force) when it is bad. */
  protected abstract adopt(text: string): Promise<void>;

  /** Increases on every change, so caches of verified tokens know to forget. */
  get version(): number {
    return this.#version;
  }

  /** Re-reads the key; true if it changed. A missing or bad text keeps the key in force. */
  async reload(): Promise<boolean> {
    if (this.#read === null) return false;
    this.#lastReloadMs = Date.now();
    let text: string;
    try {
      text = await this.#read();
    } catch {
      return false;
    }
    if (text === this.#text) return false;
    await this.adopt(text);
    this.#text = text;
    this.#version++;
    return true;
  }

  /** A token's signature or key was unknown: re-reads, at most once a second. */
  async reloadAfterFailure(): Promise<boolean> {
    if (Date.now() - this.#lastReloadMs < RELOAD_ON_FAILURE_MIN_INTERVAL_MS) return false;
    return await this.reload().catch(() => false);
  }

  /**
   * A read that begins after this call, so what it answers is as fresh as the
   * call: several callers share one read, and reads stay at most ten a
   * second (a caller within 0.1 s of the last read waits for the rest). For a token naming a key id not known yet, and for the
   * published keys, where an answer a second stale would refuse a token
   * another instance has just signed. True if the key changed.
   */
  reloadFresh(): Promise<boolean> {
    if (this.#next === null) {
      const waitMs = this.#lastReloadMs + FRESH_MIN_INTERVAL_MS - Date.now();
      this.#next = (async () => {
        // Always awaits, so #next is set before the read begins (and cleared below).
        await (waitMs > 0 ? new Promise((resolve) => setTimeout(resolve, waitMs)) : undefined);
        // Callers from now on need a read that begins after them: the next one.
        this.#next = null;
        return await this.reload().catch(() => false);
      })();
    }
    return this.#next;
  }

  /** Re-reads every intervalMs (never two at once, unref'd); returns what stops it. */
  watch(intervalMs: number, onError: (error: unknown) => void): () => void {
    if (this.#read === null) return () => {};
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.reload().catch(onError).finally(() => running = false);
    }, intervalMs);
    Deno.unrefTimer(timer);
    return () => clearInterval(timer);
  }
}
