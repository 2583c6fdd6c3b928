/**
 * The listening socket: Deno.serve over plain HTTP or, with a certificate,
 * HTTPS (HTTP/2 and HTTP/1.1 offered by ALPN, Deno's default), and the one
 * thing Deno.serve cannot do itself: change certificate while running.
 *
 * Deno.serve takes its certificate once, at bind time. The ways around that
 * are closed in Deno 2.9: a second listener beside the first needs
 * SO_REUSEPORT, which Deno allows for TLS only under --unstable-net, and
 * there is no stable API to serve HTTP on connections from a TLS listener of
 * our own (Deno.serveHttp is gone). So a new certificate replaces the
 * listener: the old server shuts down gracefully (it stops accepting; its
 * requests in flight run to the end; idle keep-alive connections are closed
 * and their clients reconnect), and the new one binds the same address as
 * soon as the old socket is closed, on the next turn of the event loop, a
 * fraction of a millisecond later. A connection attempted in between is refused.
 *
 * Deno's graceful shutdown cuts off HTTP/1.1 request bodies still being read
 * (HTTP/2 streams finish): the caller picks a moment without uploads in
 * flight (see tls_reload.ts).
 */
import type { TlsPair } from "./tls_files.ts";
import { TlsFilesError } from "./tls_files.ts";
import { sleep } from "../clock.ts";

export interface SwappableServerOptions {
  hostname: string;
  port: number;
  /** Serve HTTPS with this pair; null = plain HTTP. */
  tls: TlsPair | null;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  onError: (error: unknown) => Response | Promise<Response>;
}

/** How long a replacement waits for the old socket to be closed (normally one event-loop turn). */
const REBIND_DEADLINE_MS = 2_000;
/** How often a server that lost its address tries to bind it again. */
const LOST_RETRY_MS = 1_000;

/**
 * Neither the new pair nor the old one could be bound again (the address was
 * taken meanwhile): nothing listens. The server keeps trying to bind the old
 * pair every second; the caller must say so, never "still serving".
 */
export class ListenerLostError extends Error {
  constructor(cause: unknown) {
    super(`the listener could not be bound again (${cause}); retrying every second`, { cause });
    this.name = "ListenerLostError";
  }
}

export class SwappableServer {
  readonly #options: SwappableServerOptions;
  #server: Deno.HttpServer<Deno.NetAddr>;
  #pair: TlsPair | null;
  /** Old servers still finishing their requests; shutdown() waits for them too. */
  readonly #retiring = new Set<Promise<void>>();
  #closed = false;

  /** Binds at once (synchronously, like Deno.serve); throws AddrInUse and the like. */
  constructor(options: SwappableServerOptions) {
    this.#options = options;
    this.#pair = options.tls;
    this.#server = this.#serve(options.hostname, options.port, options.tls);
  }

  /** The bound address (the real port when 0 was asked for). */
  get addr(): Deno.NetAddr {
    return this.#server.addr;
  }

  get scheme(): "http" | "https" {
    return this.#pair === null ? "http" : "https";
  }

  /**
   * New connections get `pair`; the old listener is replaced as described
   * above. If the new pair cannot be bound, the old pair is bound again and
   * the error is thrown.
   */
  async replaceCertificate(pair: TlsPair): Promise<void> {
    if (this.#closed || this.#pair === null) return;
    const { hostname, port } = this.#server.addr;
    this.#retire(this.#server);
    try {
      this.#server = await bindWhenFree(() => this.#serve(hostname, port, pair));
      this.#pair = pair;
    } catch (error) {
      // Serving the old certificate beats serving nothing.
      try {
        this.#server = await bindWhenFree(() => this.#serve(hostname, port, this.#pair));
      } catch (lost) {
        this.#rebindUntilBound(hostname, port);
        throw new ListenerLostError(lost);
      }
      throw error;
    } finally {
      if (this.#closed) this.#retire(this.#server); // shutdown() began meanwhile
    }
  }

  /** Binds the old pair again, every second, until it works or the server shuts down. */
  #rebindUntilBound(hostname: string, port: number): void {
    const retry = () => {
      if (this.#closed) return;
      try {
        this.#server = this.#serve(hostname, port, this.#pair);
      } catch {
        Deno.unrefTimer(setTimeout(retry, LOST_RETRY_MS));
      }
    };
    Deno.unrefTimer(setTimeout(retry, LOST_RETRY_MS));
  }

  /** Stops accepting and resolves once every connection, old listeners' too, is done. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    this.#retire(this.#server);
    while (this.#retiring.size > 0) await Promise.all(this.#retiring);
  }

  #retire(server: Deno.HttpServer<Deno.NetAddr>): void {
    const done: Promise<void> = server.shutdown()
      .catch(() => {}) // already shut down
      .finally(() => this.#retiring.delete(done));
    this.#retiring.add(done);
  }

  #serve(hostname: string, port: number, pair: TlsPair | null): Deno.HttpServer<Deno.NetAddr> {
    const { handler, onError } = this.#options;
    const common = { hostname, port, onListen: () => {}, onError };
    if (pair === null) return Deno.serve(common, handler);
    try {
      return Deno.serve({ ...common, cert: pair.cert, key: pair.key }, handler);
    } catch (error) {
      if (isSocketError(error)) throw error;
      // The pair was checked; this is what Deno's TLS stack still refuses.
      throw new TlsFilesError(`cannot serve HTTPS with --tls-cert and --tls-key: ${error}`);
    }
  }
}

function isSocketError(error: unknown): boolean {
  return error instanceof Deno.errors.AddrInUse || error instanceof Deno.errors.AddrNotAvailable ||
    error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied;
}

/** Tries after one event-loop turn each, before falling back to a timer. */
const QUICK_TRIES = 50;
const EMPTY = new Uint8Array(0);

/**
 * Binds as soon as the address is free: a shut-down server's socket is closed
 * by the event loop, normally within a turn or two. Every connection attempt
 * in between is refused, so a turn is waited with an asynchronous op that
 * needs no permission (a digest of nothing: 0.3 ms measured, where a
 * setTimeout(0) costs 1 to 2 ms), and only then with a timer.
 */
async function bindWhenFree<T>(bind: () => T): Promise<T> {
  const deadline = Date.now() + REBIND_DEADLINE_MS;
  for (let tries = 1;; tries++) {
    try {
      return bind();
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse) || Date.now() >= deadline) throw error;
      if (tries < QUICK_TRIES) await crypto.subtle.digest("SHA-256", EMPTY);
      else await sleep(10);
    }
  }
}
