/**
 * Deno's HTTP server on one accepted connection: the piece of Deno.serve
 * that runs HTTP/1.1 and HTTP/2 on a socket, without Deno.serve's own accept
 * loop. Deno 2.9 has no stable API for it (Deno.serveHttp is gone), but the
 * runtime's own internals object carries `serveHttpOnConnection`, reachable
 * without --unstable; node:http's server uses the same machinery. Owning the
 * accept loop is the only way to bound connections inside the process (see
 * accept_loop.ts and docs/design.md, "Owning the accept loop").
 *
 * It is an internal: a Deno upgrade may rename or remove it. `serveConnection`
 * is then null, and the listener falls back to Deno.serve without the bounds
 * (and says so at start-up); tests/http/connection_bounds_test.ts fails first.
 */

export type ConnectionHandler = (
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Response | Promise<Response>;

/**
 * What serveHttpOnConnection needs of its "signal": it registers one abort
 * listener, which force-closes the connection. The accept loop keeps that
 * listener and calls it itself: a real AbortSignal per connection costs, and
 * an abort that lands after Deno closed the connection throws inside event
 * dispatch, which ends the process.
 */
export interface KillSwitch {
  addEventListener(type: "abort", listener: () => void, options?: unknown): void;
}

type ServeHttpOnConnection = (
  conn: Deno.Conn,
  signal: KillSwitch,
  handler: ConnectionHandler,
  onError: (error: unknown) => Response | Promise<Response>,
  onListen: () => void,
) => Deno.HttpServer<Deno.NetAddr>;

// deno-lint-ignore no-explicit-any
const internals = (Deno as any)[(Deno as any).internal];
const serveHttpOnConnection: unknown = internals?.serveHttpOnConnection;

/** Deno's HTTP server on an accepted connection; null on a Deno without it. */
export const serveConnection: ServeHttpOnConnection | null =
  typeof serveHttpOnConnection === "function"
    ? serveHttpOnConnection as ServeHttpOnConnection
    : null;

/**
 * The answer's body if it is a stream, without turning a static one (a
 * string or bytes, whose length Deno sends as Content-Length) into a stream,
 * which reading `response.body` would do. Read from the response's internal
 * slot; on a Deno without it, only answers whose Content-Length says 64 KiB
 * or more count as streamed (smaller ones fit in the socket's buffers).
 */
export function streamedBody(response: Response): ReadableStream<Uint8Array> | null {
  const slot = Object.getOwnPropertySymbols(response).find((symbol) =>
    symbol.description === "response"
  );
  const inner = slot === undefined
    ? undefined
    : (response as unknown as Record<symbol, { body?: { streamOrStatic?: unknown } | null }>)[slot];
  if (inner !== undefined) {
    return inner.body?.streamOrStatic instanceof ReadableStream ? response.body : null;
  }
  const length = Number(response.headers.get("content-length") ?? 0);
  return length >= 64 * 1024 ? response.body : null;
}

/**
 * Whether Deno's HTTP server sends this body straight from its resource (an
 * open file's `readable`), without a JavaScript step per chunk: three times
 * less CPU for a large piece. Such a body cannot be metered without losing
 * that (net/send_meter.ts), so the accept loop meters it only under pressure.
 * Read from the stream's internal slot, as Deno's own server does; false on a
 * Deno without it (every body is then metered, at the JavaScript step's cost).
 */
export function sentFromResource(body: ReadableStream<Uint8Array>): boolean {
  const slot = Object.getOwnPropertySymbols(body).find((symbol) =>
    symbol.description === "[[resourceBacking]]"
  );
  return slot !== undefined && Boolean((body as unknown as Record<symbol, unknown>)[slot]);
}

/**
 * Whether Deno's HTTP server stops a body at the answer's Content-Length for
 * this request: HTTP/1.1 does (hyper cuts the body there and the connection
 * carries on), HTTP/2 does not (what runs past it breaks the stream). Deno does
 * not tell a request's version; an HTTP/1.1 request carries a Host header,
 * which HTTP/2 clients leave out (they send :authority), so only a request
 * with Host, on a plain-text connection, counts. An HTTP/1.0 one without it,
 * and every request over TLS, gets a body cut in JavaScript instead; HTTP/2
 * by prior knowledge in plain text with a Host header added by hand would get
 * a failed answer, never wrong bytes (an HTTP/2 client refuses a body longer
 * than its Content-Length). tests/http/answer_ranges_test.ts
 * holds Deno to both.
 */
export function cutsAtContentLength(request: Request): boolean {
  // Over TLS a client may have chosen HTTP/2 by ALPN, where a Host header
  // proves nothing: there the exact stream is kept (and nginx in front speaks
  // HTTP/1.1 to the service in plain text, where the cut pays).
  return request.headers.has("host") && request.url.startsWith("http:");
}
