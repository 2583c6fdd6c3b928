/**
 * What the server is made of: every long-lived object the handlers use, built
 * here from the configuration and the opened backends (start.ts adds the
 * listener, the routes and the app). Read this file to learn what is built
 * from what:
 *
 *   backends ─┬─ pieces:   hash workers, digests, catalog, reachability,
 *             │            retrieval (with the small-piece cache), IPFS blocks
 *             │            (block index), resumable uploads, garbage
 *             │            collection (ops/gc_service.ts), and the jobs
 *             │            that run by themselves (jobs.ts: the store probe,
 *             │            the mark watches, the sweeps, gc, the scrub)
 *             ├─ accounts: token service (HMAC key), authenticator, signup
 *             │            and nonce limits, wallet chain, upload policies, mailer
 *             └─ uploads:  admission, drain, metrics
 *
 *   + the public base URL ── signup verification, wallet sign-in  (routeServicesOf)
 *
 * Two steps, because the base URL is known only once the listener is bound
 * (with --port 0 the port is picked then): `buildServices` makes everything
 * that can exist before it, `routeServicesOf` adds what needs it. start.ts
 * calls both, in that order, around binding the listener.
 */
import type { Clock } from "../kernel/clock.ts";
import { toRfc3339 } from "../kernel/clock.ts";
import type { Config } from "../config/mod.ts";
import type { Metadata } from "../backends/metadata.ts";
import { createRetrieval, SmallPieceCache } from "../http/retrieval/mod.ts";
import type { RouteServices } from "../http/routes.ts";
import { UploadDrain } from "../http/pipeline/upload_drain.ts";
import { createAuthenticator } from "../auth/authenticator.ts";
import type { Authenticator } from "../auth/caller.ts";
import type { HmacKey } from "../auth/hmac_key.ts";
import { SignupVerification } from "../auth/signup_verification.ts";
import { TokenService } from "../auth/tokens.ts";
import { hmacSigning } from "../auth/token_signing.ts";
import type { RsaKeyRing } from "../auth/rsa_keys.ts";
import { SessionService } from "../auth/sessions.ts";
import { UploadLinks } from "../auth/upload_links.ts";
import { WalletSignIn } from "../auth/wallet_sign_in.ts";
import { createSmtpMailer } from "../mail/mailer.ts";
import type { Mailer } from "../mail/mailer.ts";
import { carMaxBlocksOf, MIB, UploadPolicies } from "../limits/tiers.ts";
import { UploadAdmission } from "../limits/upload_admission.ts";
import { WindowLimit } from "../limits/window_limit.ts";
import type { Logger } from "../kernel/log.ts";
import type { ServiceMetrics } from "../metrics/service_metrics.ts";
import { ConnectionStatsSource } from "../metrics/connection_gauges.ts";
import { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import { PieceCatalog } from "../catalog/catalog.ts";
import { BlockSource } from "../ipfs/blocks.ts";
import { garbageCollectorOf } from "../ops/gc_service.ts";
import type { GarbageCollector } from "../ops/gc_service.ts";
import { DealIdGenerator } from "../catalog/deal_id.ts";
import { PieceDigests } from "../catalog/digests.ts";
import type { PieceStore } from "../driver/driver.ts";
import { StoreReachability } from "../catalog/reachability.ts";
import { WalletChain } from "../wallet/chain.ts";
import { pieceOffloadOf } from "./piece_offload.ts";
import { serverJobs } from "./jobs.ts";
import { buildServiceMetrics } from "./metrics_wiring.ts";
import type { JobName } from "./jobs.ts";
import { BackgroundJobs } from "../jobs/runner.ts";
import { EventLoopDelay } from "../kernel/event_loop_delay.ts";
import { ResumableUploads } from "../uploads/resumable.ts";
import { UploadCommits } from "../uploads/commit.ts";
import { Handoff } from "../handoff/service.ts";

export interface ServiceDeps {
  config: Config;
  clock: Clock;
  logger: Logger;
  /** Where the records live (SQLite or PostgreSQL). */
  metadata: Metadata;
  /** The piece store, already wrapped by a test's fault injection if any. */
  store: PieceStore;
  hmacKey: HmacKey;
  /** The RSA key ring under --token-alg RS256; null under HS256. */
  rsaKeys: RsaKeyRing | null;
  /** The SQLite database file, for the metrics' file sizes; null otherwise. */
  dbPath: string | null;
  /** How often each job runs (jobs.ts); 0 = not at all. */
  jobIntervals: Record<JobName, number>;
  /** How long an add in doubt is looked for before it is sent again (tests shorten it). */
  handoffReconcileMs?: number;
}

/** Everything that exists before the listener is bound (see routeServicesOf for the rest). */
export interface Services
  extends Omit<RouteServices, "baseUrl" | "signupVerification" | "walletSignIn"> {
  authenticator: Authenticator;
  /** Sends signup codes; null without --smtp-url and --mail-from. */
  mailer: Mailer | null;
  /** Where /metrics reads the accept loop's counts: start.ts attaches the bound listener. */
  connections: ConnectionStatsSource;
  /** Garbage collection (RouteServices sees only its health). */
  gc: GarbageCollector;
  /** Stops everything that runs by itself: key reload, probes, scrub, sweeps, hashing, mail. */
  stopBackgroundWork(): Promise<void>;
}

const SIGNUP_WINDOW_MS = 3_600_000;
/** Sign-in nonces one client IP may ask for per hour (each is a row until spent or expired). */
const WALLET_NONCES_PER_HOUR = 300;
/** Pieces up to this size are served from memory once read. */
const SMALL_PIECE_MAX_BYTES = 64 * 1024;

/** Builds every long-lived object that does not need the public URL; starts their timers. */
export async function buildServices(deps: ServiceDeps): Promise<Services> {
  const { config, metadata } = deps;
  // Made after the pieces' services (it reads some); they count stream aborts through it.
  let metrics: ServiceMetrics | null = null;
  const pieces = await buildPieceServices(deps, {
    onStreamAborted: (route) => metrics?.requests.streamAborted(route),
  });
  const accounts = buildAccountServices(deps);
  const uploadDrain = new UploadDrain();
  const connections = new ConnectionStatsSource();
  // The event loop's stalls, for /healthz and /metrics; stopped with the background work.
  const eventLoop = new EventLoopDelay();
  eventLoop.start();
  // With --metrics false nothing is made, so nothing is counted.
  metrics = config.metricsEnabled
    ? buildServiceMetrics({
      config,
      metadata,
      digests: pieces.digests,
      hashPool: pieces.hashPool,
      uploadDrain,
      dbPath: deps.dbPath,
      connections,
      gc: pieces.gc,
      handoff: pieces.handoff,
      eventLoop,
    })
    : null;
  return {
    config,
    clock: deps.clock,
    store: deps.store,
    records: metadata.catalog,
    tokenRecords: metadata.tokens,
    ledger: metadata.capLedger,
    databaseHealth: () => metadata.health(),
    databasePersistent: metadata.persistent,
    catalog: pieces.catalog,
    digests: pieces.digests,
    hashPool: pieces.hashPool,
    retrieval: pieces.retrieval,
    ipfsBlocks: pieces.ipfsBlocks,
    commits: pieces.commits,
    resumable: pieces.resumable,
    gc: pieces.gc,
    jobs: pieces.jobs,
    handoff: pieces.handoff,
    tokens: accounts.tokens,
    sessions: accounts.sessions,
    uploadLinks: accounts.uploadLinks,
    rsaKeys: deps.rsaKeys,
    authenticator: accounts.authenticator,
    policies: accounts.policies,
    signupLimit: accounts.signupLimit,
    walletChain: accounts.walletChain,
    walletNonceLimit: accounts.walletNonceLimit,
    mailer: accounts.mailer,
    uploadDrain,
    admission: new UploadAdmission({
      maxPinnedBytes: config.uploadMemoryBytes,
      maxPerClient: config.maxUploadsPerClient,
    }),
    metrics,
    connections,
    eventLoop,
    async stopBackgroundWork() {
      eventLoop.stop();
      accounts.stopWatchingKey();
      await pieces.stop();
      accounts.mailer?.close();
    },
  };
}

/** Adds what needs the public base URL (the links in signup mails, the SIWE domain). */
export function routeServicesOf(
  services: Services,
  context: { baseUrl: string; metadata: Metadata },
): RouteServices {
  const { baseUrl, metadata } = context;
  const { authenticator: _, mailer, stopBackgroundWork: _stop, ...shared } = services;
  const { config, clock, walletChain } = services;
  const { chainId } = config.wallet;
  return {
    ...shared,
    baseUrl,
    signupVerification: config.signup === "verify" && mailer
      ? new SignupVerification({ records: metadata.signupCodes, mailer, clock, baseUrl })
      : null,
    walletSignIn: walletChain === null || chainId === null ? null : new WalletSignIn({
      nonces: metadata.walletNonces,
      tokens: services.tokens,
      verifier: walletChain,
      clock,
      baseUrl,
      chainId,
    }),
  };
}

/** Storing, hashing, serving and checking pieces; stop() ends their jobs and workers. */
async function buildPieceServices(
  deps: ServiceDeps,
  hooks: { onStreamAborted: (route: string) => void },
) {
  const { config, clock, logger, store } = deps;
  const records = deps.metadata.catalog;
  // A server without a usable data directory has nothing to sweep or scrub.
  const intervals = deps.metadata.persistent
    ? deps.jobIntervals
    : { ...deps.jobIntervals, gc: 0, scrub: 0 };
  const hashPool = config.hashWorkers === 0
    ? null
    : new HashWorkerPool({ workers: config.hashWorkers ?? undefined });
  const digests = new PieceDigests({ store, records, logger, pool: hashPool });
  const resumed = await digests.resume();
  if (resumed > 0) {
    logger.info("hashing pieces stored before the last stop or upgrade", { resumed });
  }
  const catalog = new PieceCatalog({
    store,
    records,
    clock,
    dealIds: new DealIdGenerator(clock),
    digests,
    cidLocks: deps.metadata.cidLocks,
  });
  const reachability = new StoreReachability({ store });
  const retrieval = createRetrieval({
    store,
    catalog,
    logger,
    reachability,
    cache: new SmallPieceCache({
      maxPieceBytes: SMALL_PIECE_MAX_BYTES,
      maxTotalBytes: config.smallPieceCacheBytes,
    }),
    offload: pieceOffloadOf({ prefix: config.xAccelRedirect, dataDir: config.dataDir, store }),
    onStreamAborted: hooks.onStreamAborted,
  });
  const distrust = (cid: string) => retrieval.distrust(cid);
  const gc = garbageCollectorOf({
    ...deps,
    settings: config,
    intervalMs: intervals.gc,
    onRemoved: distrust,
  });
  const handoff = await openHandoff(deps);
  // Every upload's commit goes through it: its onCommitted is where committed pieces' work hooks in.
  const commits = new UploadCommits({
    catalog,
    logger,
    clock,
    onCommitted: handoff ? ({ deal }) => handoff.committed(deal.cid) : undefined,
    // A deal withdrawn (the provider refused its piece) took its piece with it: as a sweep's.
    onWithdrawn: async ({ mark, cid }) => {
      await deps.metadata.lifecycle.finishRemovals([mark], toRfc3339(clock.now()));
      distrust(cid);
    },
  });
  const resumable = new ResumableUploads({
    records: deps.metadata.resumableUploads,
    store,
    catalog,
    commits,
    ledger: deps.metadata.capLedger,
    hashPool,
    clock,
    logger,
    sponsoredDailyCapBytes: config.sponsored.dailyCapBytes,
    carMaxBlocks: {
      sponsored: carMaxBlocksOf(config, "sponsored"),
      token: carMaxBlocksOf(config, "token"),
      wallet: carMaxBlocksOf(config, "wallet"),
    },
  });
  // A data directory's ledger is in memory: the uploads' records say what it held.
  const held = await resumable.holdReservationsAgain();
  if (held > 0) logger.info("resumable uploads waiting for more bytes", { uploads: held });
  const jobs = new BackgroundJobs(serverJobs({
    ...deps,
    intervals,
    hashPool,
    catalog,
    reachability,
    resumable,
    gc,
    distrust,
    handoff,
  }));
  return {
    hashPool,
    digests,
    catalog,
    retrieval,
    ipfsBlocks: new BlockSource({ records: deps.metadata.blocks, catalog, store }),
    commits,
    resumable,
    gc,
    jobs,
    handoff,
    async stop() {
      // The jobs first (they sweep, scrub and hash), then sweeps asked for by hand, then hashing.
      for (const work of [jobs, gc, digests]) await work.stop();
      hashPool?.close();
    },
  };
}

/** The hand-off of --handoff pdp (null when off); a bad key file or setting stops the start. */
async function openHandoff(deps: ServiceDeps): Promise<Handoff | null> {
  const { config, metadata } = deps;
  if (config.handoff.mode === "off") return null;
  return await Handoff.open({
    config: config.handoff,
    baseUrl: config.baseUrl!,
    records: metadata.handoffs,
    turn: metadata.handoffTurn,
    clock: deps.clock,
    logger: deps.logger,
    reconcileMs: deps.handoffReconcileMs,
  });
}

/** Tokens, signup and the wallet tier: who may upload, and how much. */
function buildAccountServices(deps: ServiceDeps) {
  const { config, clock, logger, hmacKey, rsaKeys } = deps;
  const tokens = new TokenService({
    signing: rsaKeys?.signing(clock) ?? hmacSigning(hmacKey),
    records: deps.metadata.tokens,
    clock,
    lifetimeDays: config.tokenLifetimeDays,
    maxQuotaMb: Math.floor(config.token.dailyCapBytes / MIB),
  });
  const sessions = new SessionService({ tokens, records: deps.metadata.sessions, clock });
  const stopWatchingKey = (rsaKeys ?? hmacKey).watch(
    config.hmacKeyReloadMs,
    (error) => logger.error("cannot reload the token key", { error: String(error) }),
  );
  const { wallet } = config;
  const walletChain = wallet.rpcUrl !== null && wallet.chainId !== null &&
      wallet.usdcAddress !== null
    ? new WalletChain({
      rpcUrl: wallet.rpcUrl,
      chainId: wallet.chainId,
      usdcAddress: wallet.usdcAddress,
      balanceTtlMs: wallet.balanceTtlMs,
      clock,
      logger,
    })
    : null;
  return {
    tokens,
    stopWatchingKey,
    sessions,
    uploadLinks: new UploadLinks({ tokens, records: deps.metadata.uploadLinks, clock }),
    authenticator: createAuthenticator({ tokens, sessions, queryToken: config.queryToken }),
    walletChain,
    policies: new UploadPolicies({ config, walletBalances: walletChain }),
    signupLimit: new WindowLimit({
      limit: config.signupsPerHour,
      windowMs: SIGNUP_WINDOW_MS,
      clock,
    }),
    walletNonceLimit: new WindowLimit({
      limit: WALLET_NONCES_PER_HOUR,
      windowMs: SIGNUP_WINDOW_MS,
      clock,
    }),
    mailer: config.smtpUrl && config.mailFrom
      ? createSmtpMailer({ url: config.smtpUrl, from: config.mailFrom })
      : null,
  };
}
