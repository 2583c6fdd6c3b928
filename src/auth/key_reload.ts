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

export abstract class ReloadingKey {
  #text: string;
  #version = 1;
  #lastReloadMs = 0;
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
