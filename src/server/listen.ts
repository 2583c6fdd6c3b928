/**
 * Binding the listener: the one seam between the composition root and the
 * socket. Behind it: the service's own accept loop (net/accept_loop.ts:
 * connection cap, header deadline, keep-alive timeout, survival of EMFILE)
 * on a Deno.listen or Deno.listenTls socket, in a SwappableServer that swaps
 * the TLS listener when the certificate files are renewed (see
 * net/tls_reload.ts); or, with --connection-bounds false, Deno.serve.
 * start.ts knows only `bindListener` and `Listener`.
 */
import { settlesWithin } from "../kernel/clock.ts";
import { ApiError, errorResponse } from "../kernel/errors.ts";
import type { Logger } from "../kernel/log.ts";
import type { TlsConfig, TlsPair } from "../net/tls_files.ts";
import { startTlsReload } from "../net/tls_reload.ts";
import { SwappableServer } from "../net/swappable_server.ts";
import type { ConnectionBounds, ConnectionStats } from "../net/accept_loop.ts";
import { clientKeyOf, parseIp, rangeContains } from "../net/ip.ts";
import type { IpRange } from "../net/ip.ts";

export interface ListenOptions {
  hostname: string;
  port: number;
  /** Serve HTTPS with this pair, re-read when its files change; null = plain HTTP. */
  tls: { files: TlsConfig; pair: TlsPair } | null;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  logger: Logger;
  /** How often the TLS files are checked for a renewal (default 5 s). */
  tlsPollIntervalMs?: number;
  /** Uploads in flight: a certificate switch waits for none, as it cuts HTTP/1.1 bodies off. */
  uploadsInFlight(): number;
  /** The longest a certificate switch waits for uploads to finish before switching anyway. */
  maxUploadWaitMs: number;
  /** The own accept loop's bounds; null: Deno.serve accepts, unbounded. */
  bounds: ConnectionBounds | null;
  /** Peers whose connections carry many clients: not held to bounds.maxPerClient. */
  trustedProxies: readonly IpRange[];
}

export interface Listener {
  /** The listen address as a URL, e.g. http://127.0.0.1:8080 (no trailing slash). */
  readonly url: string;
  /** The bound address (the real port when 0 was asked for). */
  readonly addr: Deno.NetAddr;
  /** Stops watching the TLS files, so no listener swap happens while the shutdown drains. */
  stopCertificateReload(): Promise<void>;
  /** Whether the own accept loop bounds connections (false: Deno.serve, or a Deno without it). */
  readonly bounded: boolean;
  /** The accept loop's counts; null when unbounded. */
  connectionStats(): Readonly<ConnectionStats> | null;
  /** Stops accepting and closes the connections; false if some were still open at the deadline. */
  close(): Promise<boolean>;
}

/** Certificates renew weeks before they expire: a few seconds to notice is plenty. */
const DEFAULT_TLS_POLL_INTERVAL_MS = 5_000;
/** A client that holds an idle connection open must not hold the process hostage. */
const SERVER_CLOSE_TIMEOUT_MS = 3_000;

/** Binds at once (synchronously); throws AddrInUse and the like, with nothing left behind. */
export function bindListener(options: ListenOptions): Listener {
  const { logger, tls } = options;
  const server = new SwappableServer({
    hostname: options.hostname,
    port: options.port,
    tls: tls?.pair ?? null,
    onError: (error) => {
      // Our pipeline renders its own errors; this catches only what escapes it.
      logger.error("unhandled server error", { error: String(error) });
      return errorResponse(new ApiError("internal_error", "Internal server error"));
    },
    handler: options.handler,
    bounds: options.bounds,
    clientKeyOf: (remote) => {
      const address = parseIp(remote.hostname);
      if (address === null) return remote.hostname;
      const isProxy = options.trustedProxies.some((range) => rangeContains(range, address));
      return isProxy ? null : clientKeyOf(address);
    },
    logger,
  });
  const reload = tls === null ? null : startTlsReload({
    files: tls.files,
    server,
    current: tls.pair,
    pollIntervalMs: options.tlsPollIntervalMs ?? DEFAULT_TLS_POLL_INTERVAL_MS,
    uploadsInFlight: options.uploadsInFlight,
    maxUploadWaitMs: options.maxUploadWaitMs,
    logger,
  });
  const host = server.addr.hostname.includes(":")
    ? `[${server.addr.hostname}]`
    : server.addr.hostname;
  return {
    url: `${server.scheme}://${host}:${server.addr.port}`,
    addr: server.addr,
    bounded: server.bounded,
    connectionStats: () => server.connectionStats,
    stopCertificateReload: async () => await reload?.stop(),
    close: async () => {
      // The shutdown's own verdict (false: connections were cut), if it came in time.
      let drained = false;
      const inTime = await settlesWithin(
        server.shutdown().then((verdict) => drained = verdict),
        SERVER_CLOSE_TIMEOUT_MS,
      );
      return inTime && drained;
    },
  };
}
