/**
 * Lets a shutdown finish the uploads in flight before the HTTP server stops.
 * Deno's server.shutdown() stops reading request bodies at once, so uploads
 * must be drained before it is called, not by it: first refuse new uploads
 * (`draining`), then wait for the running ones, and after a timeout abort
 * them (`signal`), which removes their temp files and releases their caps.
 */
import { ApiError } from "../../kernel/errors.ts";
import type { Handler } from "./router.ts";

export class UploadDrain {
  #count = 0;
  #idle: PromiseWithResolvers<void> | null = null;
  #draining = false;
  readonly #giveUp = new AbortController();

  /** True once a shutdown has begun: new uploads are refused, connections not kept alive. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Aborted when the shutdown stops waiting for uploads still in flight. */
  get signal(): AbortSignal {
    return this.#giveUp.signal;
  }

  /** Uploads running now (reported by /healthz). */
  get inFlight(): number {
    return this.#count;
  }

  /** Runs one upload, counted until it settles. */
  async track<T>(upload: () => Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await upload();
    } finally {
      this.#count--;
      if (this.#count === 0) this.#idle?.resolve();
    }
  }

  /** The upload handler as a drain needs it: refused once a shutdown has begun, counted meanwhile. */
  guard(upload: Handler): Handler {
    return (request, context) => {
      if (this.#draining) {
        throw new ApiError("storage_offline", "Server is shutting down; retry shortly", {
          headers: { "retry-after": "5" },
        });
      }
      return this.track(async () => await upload(request, context));
    };
  }

  /**
   * Stops accepting uploads and resolves once those in flight have finished,
   * or, after timeoutMs, once they have been aborted. Returns how many had to be aborted.
   */
  async drain(timeoutMs: number): Promise<{ aborted: number }> {
    this.#draining = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finished = await Promise.race([
      this.#whenIdle().then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), timeoutMs)),
    ]);
    clearTimeout(timer);
    if (finished) return { aborted: 0 };
    const aborted = this.#count;
    this.#giveUp.abort(new Error("server shutting down"));
    await this.#whenIdle();
    return { aborted };
  }

  #whenIdle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    this.#idle ??= Promise.withResolvers<void>();
    return this.#idle.promise.finally(() => this.#idle = null);
  }
}
