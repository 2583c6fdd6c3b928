/**
 * The composition root: config → backends (metadata in SQLite or PostgreSQL,
 * pieces on disk or in a bucket, the HMAC key) → every long-lived object
 * (services.ts) → the listener (listen.ts: plain or TLS, the certificate
 * reloaded when its files change) → routes → app, and the shutdown that takes
 * it all down again in order (shutdown.ts). Nothing outside src/server/
 * constructs a long-lived object. main.ts and the integration tests both start
 * the service through startServer, so tests run what production runs.
 */
import { RsaKeyRing } from "../auth/rsa_keys.ts";
import { systemClock } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { ConfigError } from "../config/mod.ts";
import type { Config } from "../config/mod.ts";
import { openBackends, SERVING } from "../backends/open.ts";
import type { BackendNeeds, OpenBackendsOptions } from "../backends/open.ts";
import type { Metadata } from "../backends/metadata.ts";
import type { Database } from "../db/sqlite/database.ts";
import { createApp } from "../http/pipeline/app.ts";
import { createRoutes, tusDiscovery } from "../http/routes.ts";
import type { RouteServices } from "../http/routes.ts";
import type { Route } from "../http/pipeline/router.ts";
import { createStderrLogger, resolveLogFormat } from "../kernel/log.ts";
import type { Logger } from "../kernel/log.ts";
import { readTlsPair } from "../net/tls_files.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { GarbageCollector } from "../ops/gc_service.ts";
import { bindListener } from "./listen.ts";
import type { ConnectionBounds, ConnectionStats } from "../net/accept_loop.ts";
import type { MinBodyRate } from "../kernel/streams/read_watchdog.ts";
import { isLoopbackHostname } from "../net/ip.ts";
import { serveConnection } from "../net/serve_connection.ts";
import type { Listener } from "./listen.ts";
import { jobIntervalsOf } from "./jobs.ts";
import type { JobIntervals } from "./jobs.ts";
import { buildServices, routeServicesOf } from "./services.ts";
import { orderedShutdown } from "./shutdown.ts";
import type { Shutdown } from "./shutdown.ts";
import { logStartupSummary, warnAboutPublicExposure } from "./startup_summary.ts";
import type { StartupSummary } from "./startup_summary.ts";

export interface StartServerOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger & { flush?(): Promise<void> };
  /** Wraps the piece store (fault-injection tests); production passes nothing. */
  wrapStore?: (store: PieceStore) => PieceStore;
  /**
   * How often background jobs run, in ms, by name (tests shorten them; jobs.ts has the
   * defaults, and --gc-interval and --scrub-interval set theirs); 0 turns a job off.
   */
  jobIntervals?: JobIntervals;
  /** How long the hand-off looks for an add in doubt before sending it again (default 10 min). */
  handoffReconcileMs?: number;
  /** How often the TLS files are checked for a renewal (default 5 s). */
  tlsPollIntervalMs?: number;
  /** With PostgreSQL: heartbeat and dead-after times (tests shorten them; default 5 s, 30 s). */
  postgresTimings?: OpenBackendsOptions<BackendNeeds>["postgresTimings"];
}

export interface RunningServer {
  /** The listen address as a URL, e.g. http://127.0.0.1:8080 (no trailing slash). */
  url: string;
  baseUrl: string;
  port: number;
  /** The long-lived objects, for tests that look inside (ledger, digests, …). */
  services: RouteServices;
  routes: readonly Route[];
  store: PieceStore;
  /** Where the records live (SQLite or PostgreSQL), for tests that look inside. */
  metadata: Metadata;
  /** Garbage collection: tests sweep with it (`gc.sweep({ asOf })`). */
  gc: GarbageCollector;
  /** The SQLite database, for tests that look inside; throws when the metadata is in PostgreSQL. */
  readonly db: Database;
  /** What the accept loop has done (open, refused, evicted, timed out); null when unbounded. */
  connections(): Readonly<ConnectionStats> | null;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes. */
  shutdown: Shutdown;
}

/**
 * Starts the service, in this order: read the TLS files (bad ones stop the
 * start before the data directory is touched), open the backends, build the
 * services, bind the listener, log the summary, and only then make the routes
 * and the app, which need the public URL the listener decides (--port 0).
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ??
    createStderrLogger({ format: resolveLogFormat(config.logFormat) });

  const tlsPair = config.tls === null ? null : await readTlsPair(config.tls);
  requireConnectionBounds(config);
  const backends = await openBackends(config, {
    ...SERVING,
    logger,
    clock,
    postgresTimings: options.postgresTimings,
  });
  const { metadata } = backends;
  const closeStorage = async () => {
    await metadata.close();
    backends.lock?.release();
  };
  // Leftovers of interrupted uploads are swept in the background (jobs.ts): a store
  // that cannot be reached now makes the server start unready, not fail.
  const store = options.wrapStore ? options.wrapStore(backends.store) : backends.store;
  const services = await buildServices({
    config,
    clock,
    logger,
    metadata,
    store,
    hmacKey: backends.hmacKey,
    // Under RS256 the RSA keys sign: the data directory's, or with --database the ones every
    // instance shares; made on first start, like the HMAC key.
    rsaKeys: config.tokenAlg === "RS256" && backends.rsaKeyStore !== null
      ? await RsaKeyRing.open(backends.rsaKeyStore, { createIfMissing: true })
      : null,
    dbPath: backends.dbPath,
    jobIntervals: jobIntervalsOf(config, options.jobIntervals),
    handoffReconcileMs: options.handoffReconcileMs,
  });
  // Read before the listener is bound: from then on until `app` exists nothing may await.
  const lastSweep = await metadata.lifecycle.lastSweep().catch(() => null);

  // With --port 0 the base URL is known only once bound. Requests are dispatched
  // after this synchronous block ends, so `app` is assigned before the first one.
  let listener: Listener;
  try {
    listener = bindListener({
      hostname: config.hostname,
      port: config.port,
      tls: config.tls === null || tlsPair === null ? null : { files: config.tls, pair: tlsPair },
      handler: (request, info) => app.fetch(request, info),
      logger,
      tlsPollIntervalMs: options.tlsPollIntervalMs,
      uploadsInFlight: () => services.uploadDrain.inFlight,
      maxUploadWaitMs: config.shutdownTimeoutMs,
      bounds: connectionBoundsOf(config),
      trustedProxies: config.trustedProxies,
    });
  } catch (error) {
    // Nothing is served: take down what was started (a port in use must not leave the
    // data directory locked, or timers and workers running).
    await services.stopBackgroundWork();
    await closeStorage();
    throw error;
  }
  services.connections.attach(() => listener.connectionStats());
  const baseUrl = config.baseUrl ?? listener.url;
  announceStart(logger, listener, {
    config,
    url: listener.url,
    baseUrl,
    certificate: tlsPair?.certificate ?? null,
    hmacKeyWhere: backends.hmacKeyWhere,
    connectionsBounded: listener.bounded,
    lastSweep,
    handoffPayer: services.handoff?.payer ?? null,
  });
  const routeServices = routeServicesOf(services, { baseUrl, metadata });
  const routes = createRoutes(routeServices);
  const app = createApp({
    routes,
    fastPath: services.retrieval.fastPath,
    authenticator: services.authenticator,
    baseUrl,
    trustedProxies: config.trustedProxies,
    logger,
    logRequests: config.logRequests,
    bodyIdleTimeoutMs: config.bodyIdleTimeoutMs,
    bodyMinRate: bodyMinRateOf(config),
    uploadDrain: services.uploadDrain,
    metrics: services.metrics?.requests ?? null,
    preflightExtras: (pathname) => tusDiscovery(config, pathname),
  });

  return {
    url: listener.url,
    baseUrl,
    port: listener.addr.port,
    services: routeServices,
    routes,
    store,
    metadata,
    gc: services.gc,
    get db(): Database {
      if (backends.sqlite === null) throw new Error("This server keeps its metadata in PostgreSQL");
      return backends.sqlite;
    },
    connections: () => listener.connectionStats(),
    shutdown: orderedShutdown({
      listener,
      uploadDrain: services.uploadDrain,
      stopBackgroundWork: services.stopBackgroundWork,
      closeStorage,
      defaultTimeoutMs: config.shutdownTimeoutMs,
      logger,
    }),
  };
}

/** The accept loop's bounds; null under --connection-bounds false (Deno.serve accepts). */
function connectionBoundsOf(config: Config): ConnectionBounds | null {
  if (!config.connectionBounds) return null;
  return {
    maxConnections: config.maxConnections,
    maxPerClient: config.maxConnectionsPerClient,
    headerTimeoutMs: config.headerTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    // An answer is held to the same idle timeout and grace as a request body; 0: not watched.
    send: config.sendMinBytesPerSecond === 0 ? null : {
      idleMs: config.bodyIdleTimeoutMs,
      minRate: { bytesPerSecond: config.sendMinBytesPerSecond, graceMs: config.bodyRateGraceMs },
    },
  };
}

/** Every request body's minimum average rate; null under --body-min-rate 0. */
function bodyMinRateOf(config: Config): MinBodyRate | null {
  if (config.bodyMinBytesPerSecond === 0) return null;
  return { bytesPerSecond: config.bodyMinBytesPerSecond, graceMs: config.bodyRateGraceMs };
}

/**
 * The accept loop needs an internal of Deno 2.9 (net/serve_connection.ts).
 * Without it, Deno.serve accepts, unbounded: fine on loopback (said in the
 * log), a start-up error on a public address unless bounds are off by choice.
 */
function requireConnectionBounds(config: Config): void {
  if (!config.connectionBounds || serveConnection !== null) return;
  if (isLoopbackHostname(config.hostname)) return;
  throw new ConfigError(
    `this Deno (${Deno.version.deno}) cannot bound connections (no serveHttpOnConnection), and ` +
      `${config.hostname} is a public address: run the pinned Deno 2.9.6, or put nginx in ` +
      "front and start with --connection-bounds false",
  );
}

/** The start-up summary, then a warning for what a public address exposes. */
function announceStart(logger: Logger, listener: Listener, summary: StartupSummary): void {
  logStartupSummary(logger, summary);
  warnAboutPublicExposure(logger, {
    config: summary.config,
    hostname: listener.addr.hostname,
    connectionsBounded: listener.bounded,
  });
}
