/**
 * The listening socket: plain HTTP or, with a certificate, HTTPS (HTTP/2 and
 * HTTP/1.1 offered by ALPN), and the one thing Deno cannot do itself: change
 * certificate while running.
 *
 * Connections are accepted by the service's own accept loop (accept_loop.ts,
 * which bounds them) on a Deno.listen or Deno.listenTls socket; with
 * `bounds: null`, or on a Deno without the internal the loop needs, by
 * Deno.serve, unbounded.
 *
 * A certificate is taken once, at bind time, and a second listener beside the
 * first needs SO_REUSEPORT, which Deno allows for TLS only under
 * --unstable-net. So a new certificate replaces the listener: the old one
 * closes and the new one binds the same address as soon as the old socket is
 * closed, a fraction of a millisecond later (a connection attempted in
 * between is refused). With the accept loop, connections already accepted
 * carry on untouched. With Deno.serve, the old server shuts down gracefully,
 * which cuts off HTTP/1.1 request bodies still being read (HTTP/2 streams
 * finish): the caller picks a moment without uploads in flight
 * (`swapCutsUploads`, see tls_reload.ts).
 */
import type { TlsPair } from "./tls_files.ts";
import { TlsFilesError } from "./tls_files.ts";
import { sleep } from "../kernel/clock.ts";
import { silentLogger } from "../kernel/log.ts";
import type { Logger } from "../kernel/log.ts";
import { AcceptLoop } from "./accept_loop.ts";
import type { ConnectionBounds, ConnectionStats } from "./accept_loop.ts";
import { serveConnection } from "./serve_connection.ts";

export interface SwappableServerOptions {
  hostname: string;
  port: number;
  /** Serve HTTPS with this pair; null = plain HTTP. */
  tls: TlsPair | null;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  onError: (error: unknown) => Response | Promise<Response>;
  /** Bounds of the own accept loop; null: Deno.serve, without bounds. */
  bounds?: ConnectionBounds | null;
  /** The key a connection counts against for bounds.maxPerClient; null: not counted. */
  clientKeyOf?: (remote: Deno.NetAddr) => string | null;
  logger?: Logger;
}

/** How long a replacement waits for the old socket to be closed (normally one event-loop turn). */
const REBIND_DEADLINE_MS = 2_000;
/** How often a server that lost its address tries to bind it again. */
const LOST_RETRY_MS = 1_000;
/** At shutdown, how long connections with an answer still going out are given. */
const SHUTDOWN_GRACE_MS = 2_000;

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

/** One bound socket: its address, and how to stop listening on it. */
interface Binding {
  readonly addr: Deno.NetAddr;
  /** Stops accepting; with Deno.serve also ends its connections (gracefully). */
  retire(): Promise<void>;
}

export class SwappableServer {
  readonly #options: SwappableServerOptions;
  /** null: Deno.serve accepts. */
  readonly #loop: AcceptLoop | null;
  #binding: Binding;
  #pair: TlsPair | null;
  /** Old bindings still finishing; shutdown() waits for them too. */
  readonly #retiring = new Set<Promise<void>>();
  #closed = false;

  /** Binds at once (synchronously, like Deno.serve); throws AddrInUse and the like. */
  constructor(options: SwappableServerOptions) {
    this.#options = options;
    this.#pair = options.tls;
    this.#loop = options.bounds && serveConnection !== null
      ? new AcceptLoop({
        bounds: options.bounds,
        handler: options.handler,
        onError: options.onError,
        clientKeyOf: options.clientKeyOf ?? ((remote) => remote.hostname),
        logger: options.logger ?? silentLogger,
      })
      : null;
    try {
      this.#binding = this.#bind(options.hostname, options.port, options.tls);
    } catch (error) {
      void this.#loop?.shutdown(0);
      throw error;
    }
  }

  /** The bound address (the real port when 0 was asked for). */
  get addr(): Deno.NetAddr {
    return this.#binding.addr;
  }

  get scheme(): "http" | "https" {
    return this.#pair === null ? "http" : "https";
  }

  /** Whether connections are bounded (the own accept loop serves them). */
  get bounded(): boolean {
    return this.#loop !== null;
  }

  /** The accept loop's counts; null under Deno.serve. */
  get connectionStats(): Readonly<ConnectionStats> | null {
    return this.#loop?.stats ?? null;
  }

  /** Whether replacing the certificate cuts off HTTP/1.1 uploads in flight (Deno.serve does). */
  get swapCutsUploads(): boolean {
    return this.#loop === null;
  }

  /**
   * New connections get `pair`; the old listener is replaced as described
   * above. If the new pair cannot be bound, the old pair is bound again and
   * the error is thrown.
   */
  async replaceCertificate(pair: TlsPair): Promise<void> {
    if (this.#closed || this.#pair === null) return;
    const { hostname, port } = this.#binding.addr;
    this.#retire(this.#binding);
    try {
      this.#binding = await bindWhenFree(() => this.#bind(hostname, port, pair));
      this.#pair = pair;
    } catch (error) {
      // Serving the old certificate beats serving nothing.
      try {
        this.#binding = await bindWhenFree(() => this.#bind(hostname, port, this.#pair));
      } catch (lost) {
        this.#rebindUntilBound(hostname, port);
        throw new ListenerLostError(lost);
      }
      throw error;
    } finally {
      if (this.#closed) this.#retire(this.#binding); // shutdown() began meanwhile
    }
  }

  /** Binds the old pair again, every second, until it works or the server shuts down. */
  #rebindUntilBound(hostname: string, port: number): void {
    const retry = () => {
      if (this.#closed) return;
      try {
        this.#binding = this.#bind(hostname, port, this.#pair);
      } catch {
        Deno.unrefTimer(setTimeout(retry, LOST_RETRY_MS));
      }
    };
    Deno.unrefTimer(setTimeout(retry, LOST_RETRY_MS));
  }

  /**
   * Stops accepting and resolves once every connection, old listeners' too,
   * is done; false if some were still open after the grace and were closed.
   */
  async shutdown(): Promise<boolean> {
    this.#closed = true;
    this.#retire(this.#binding);
    while (this.#retiring.size > 0) await Promise.all(this.#retiring);
    return await this.#loop?.shutdown(SHUTDOWN_GRACE_MS) ?? true;
  }

  #retire(binding: Binding): void {
    const done: Promise<void> = binding.retire()
      .catch(() => {}) // already retired
      .finally(() => this.#retiring.delete(done));
    this.#retiring.add(done);
  }

  #bind(hostname: string, port: number, pair: TlsPair | null): Binding {
    try {
      return this.#loop === null
        ? this.#bindDenoServe(hostname, port, pair)
        : this.#bindListener(this.#loop, hostname, port, pair);
    } catch (error) {
      if (pair === null || isSocketError(error)) throw error;
      // The pair was checked; this is what Deno's TLS stack still refuses.
      throw new TlsFilesError(`cannot serve HTTPS with --tls-cert and --tls-key: ${error}`);
    }
  }

  #bindListener(loop: AcceptLoop, hostname: string, port: number, pair: TlsPair | null): Binding {
    const listener = pair === null ? Deno.listen({ hostname, port }) : Deno.listenTls({
      hostname,
      port,
      cert: pair.cert,
      key: pair.key,
      alpnProtocols: ["h2", "http/1.1"],
    });
    const serving = loop.serve(listener);
    return {
      addr: listener.addr as Deno.NetAddr,
      retire: async () => {
        listener.close();
        await serving;
      },
    };
  }

  #bindDenoServe(hostname: string, port: number, pair: TlsPair | null): Binding {
    const { handler, onError } = this.#options;
    const common = { hostname, port, onListen: () => {}, onError };
    const server = pair === null
      ? Deno.serve(common, handler)
      : Deno.serve({ ...common, cert: pair.cert, key: pair.key }, handler);
    const binding: Binding = { addr: server.addr, retire: () => server.shutdown() };
    // Deno.serve's accept loop ends at the first accept() error (EMFILE) and drops the socket;
    // `finished` then rejects, which, unobserved, would end the process. Bind again instead.
    server.finished.catch((error) => {
      if (this.#closed || this.#binding !== binding) return;
      (this.#options.logger ?? silentLogger).error(
        "the listener stopped accepting; binding it again every second",
        { error: error instanceof Error ? error.message : String(error) },
      );
      // The address it had, not the one asked for (port 0 would pick another port).
      this.#rebindUntilBound(server.addr.hostname, server.addr.port);
    });
    return binding;
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
