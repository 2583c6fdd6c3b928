/**
 * The route table of the whole service: each row is a method, a path, the
 * handler built from the services the composition root (server/) made, and
 * the route's API documentation, from docs/ (one file per room; route_doc.ts
 * draws the shape). /openapi.json is generated from these rows.
 */
import type { Handoff } from "../handoff/service.ts";
import type { SignupVerification } from "../auth/signup_verification.ts";
import type { WalletSignIn } from "../auth/wallet_sign_in.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { SessionService } from "../auth/sessions.ts";
import type { UploadLinks } from "../auth/upload_links.ts";
import type { RsaKeyRing } from "../auth/rsa_keys.ts";
import { createJwksHandler, JWKS_PATH } from "./account/jwks.ts";
import type { Clock } from "../kernel/clock.ts";
import type { Config } from "../config/mod.ts";
import type { CatalogRecords } from "../domain/catalog_records.ts";
import type { TokenRecords } from "../domain/auth_records.ts";
import type { CapLedger } from "../domain/cap_ledger.ts";
import type { UploadAdmission } from "../limits/upload_admission.ts";
import { MIB } from "../limits/tiers.ts";
import type { UploadPolicies } from "../limits/tiers.ts";
import type { WindowLimit } from "../limits/window_limit.ts";
import type { ServiceMetrics } from "../metrics/service_metrics.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { PieceDigests } from "../catalog/digests.ts";
import type { PieceStore } from "../driver/driver.ts";
import type { WalletChain } from "../wallet/chain.ts";
import type { BlockSource } from "../ipfs/blocks.ts";
import type { DatabaseHealth, GcHealth, JobHealth } from "../kernel/health_wire.ts";
import {
  createDeleteDealHandler,
  createExtendDealHandler,
  createGetDealHandler,
} from "./account/deals.ts";
import { createDealCreateHandler } from "./upload/deal_create.ts";
import { deprecationsHandler } from "./pipeline/deprecation.ts";
import { createFilesHandler } from "./account/files.ts";
import { createHealthHandler } from "./service/health.ts";
import { createLimitsHandler } from "./account/limits.ts";
import { createMetricsHandler } from "./service/metrics.ts";
import { createOpenApiHandler } from "./docs/openapi.ts";
import { createComputePieceCidHandler, createPieceCidsInfoHandler } from "./upload/piece_cids.ts";
import {
  computePieceCidDoc,
  createDealDoc,
  describePieceCidsDoc,
  uploadDoc,
} from "./docs/upload_docs.ts";
import {
  FILE_PATH,
  getFileDoc,
  getGatewayPieceDoc,
  getPieceDoc,
  getPieceStatusDoc,
  PIECE_GATEWAY_PATH,
  PIECE_STATUS_PATH,
  RETRIEVAL_PATH,
} from "./retrieval/mod.ts";
import type { Retrieval } from "./retrieval/mod.ts";
import { createIpfsHandler, IPFS_PATH } from "./ipfs/ipfs.ts";
import type { RouteDoc } from "./docs/route_doc.ts";
import type { Handler, Route } from "./pipeline/router.ts";
import { createSignupHandler, createSignupVerifyHandler } from "./account/signup.ts";
import type { SignupDeps } from "./account/signup.ts";
import { createRevokeHandler, createTokenListHandler } from "./account/tokens.ts";
import {
  createSessionEndHandler,
  createSessionInfoHandler,
  createSessionStartHandler,
} from "./account/session.ts";
import type { UploadDrain } from "./pipeline/upload_drain.ts";
import { createUploadHandler } from "./upload/upload.ts";
import {
  createLinkUploadHandler,
  createUploadLinkHandler,
  UPLOAD_LINKS_PATH,
} from "./upload/upload_links.ts";
import { createUploadLinkDoc, uploadThroughLinkDoc } from "./docs/upload_link_docs.ts";
import { createTusHandlers, TUS_PATH, tusDocs } from "./tus/tus.ts";
import { tusDiscoveryHeaders } from "./tus/tus_protocol.ts";
import type { ResumableUploads } from "../uploads/resumable.ts";
import type { UploadCommits } from "../uploads/commit.ts";
import { UploadPipeline } from "../uploads/pipeline.ts";
import { createUsageHandler } from "./account/usage.ts";
import { createWalletNonceHandler, createWalletSignInHandler } from "./account/wallet.ts";
import { createWebHandlers } from "./service/web.ts";
import {
  deleteDealDoc,
  endSessionDoc,
  extendDealDoc,
  getDealDoc,
  getJwksDoc,
  getLimitsDoc,
  getSessionDoc,
  getUsageDoc,
  getWalletNonceDoc,
  listFilesDoc,
  listTokensDoc,
  revokeTokenDoc,
  signInWithWalletDoc,
  signupDoc,
  startSessionDoc,
  verifySignupDoc,
} from "./docs/account_docs.ts";
import { getIpfsDoc } from "./docs/ipfs_docs.ts";
import {
  getFaviconDoc,
  getHealthDoc,
  getMetricsDoc,
  getOpenApiDoc,
  getWebAssetDoc,
  getWebPageDoc,
  listDeprecationsDoc,
} from "./docs/service_docs.ts";

/** The long-lived objects handlers use; all constructed by server/services.ts. */
export interface RouteServices {
  config: Config;
  /** Public base URL without a trailing slash. */
  baseUrl: string;
  clock: Clock;
  store: PieceStore;
  records: CatalogRecords;
  tokenRecords: TokenRecords;
  tokens: TokenService;
  /** The page's cookie sessions. */
  sessions: SessionService;
  /** Signed upload links. */
  uploadLinks: UploadLinks;
  /** The RSA keys of --token-alg RS256 (their public halves are published); null under HS256. */
  rsaKeys: RsaKeyRing | null;
  catalog: PieceCatalog;
  digests: PieceDigests;
  ledger: CapLedger;
  /** Each caller's tier and caps (a wallet's from its balance). */
  policies: UploadPolicies;
  admission: UploadAdmission;
  /** Workers that verify piece cids; null hashes on the main thread. */
  hashPool: HashWorkerPool | null;
  retrieval: Retrieval;
  /** The blocks of CAR uploads (and raw sha2-256 uploads), for the IPFS gateway. */
  ipfsBlocks: BlockSource;
  /** Every upload's commit, and who hears of it (the upload pipeline's, uploads/pipeline.ts). */
  commits: UploadCommits;
  /** Resumable (tus) uploads: their records, bytes, hashes and expiry. */
  resumable: ResumableUploads;
  signupLimit: WindowLimit;
  /** Mails and redeems signup codes; null unless --signup verify. */
  signupVerification: SignupVerification | null;
  /** The wallet tier's chain and sign-in; null without --wallet-rpc-url. */
  walletChain: WalletChain | null;
  walletSignIn: WalletSignIn | null;
  /** Sign-in nonces per client IP per hour. */
  walletNonceLimit: WindowLimit;
  uploadDrain: UploadDrain;
  /** Garbage collection, as /healthz shows it (ops/gc_service.ts). */
  gc: { health(): Promise<GcHealth> };
  /** The jobs the server runs by itself, as /healthz shows them (server/jobs.ts). */
  jobs: { health(): JobHealth[] };
  /** The hand-off to a storage provider (src/handoff/); null with --handoff off. */
  handoff: Handoff | null;
  databaseHealth(): Promise<DatabaseHealth>;
  /** False when tokens cannot be kept (an in-memory database: no data directory bound). */
  databasePersistent: boolean;
  /** What GET /metrics renders; null with --metrics false. */
  metrics: ServiceMetrics | null;
  /** How long the event loop was held lately, as /healthz shows it (kernel/event_loop_delay.ts). */
  eventLoop: { recentMax(): number };
}

/** The web page's cookie session. */
const SESSION_PATH = "/api/auth/session";

/** The upload route (also how the metrics tell uploads from other answers). */
export const UPLOAD_PATH = "/api/upload";

/** One row of the table: method, path, handler, and the route's doc (from docs/). */
type Row = [Route["method"], string, Handler, RouteDoc];

/**
 * Every route the server answers, in the order /openapi.json lists them; the
 * document describes every row, its own included.
 */
export function createRoutes(services: RouteServices): Route[] {
  const signup = signupDepsOf(services);
  const wallet = {
    signIn: services.walletSignIn,
    nonceLimit: services.walletNonceLimit,
    databaseIsPersistent: services.databasePersistent,
  };
  const web = createWebHandlers(services.baseUrl);
  // POST /api/upload, the tus endpoint and POST /api/deals are the upload pipeline's adapters.
  const pipeline = new UploadPipeline(services);
  const uploads = { baseUrl: services.baseUrl, uploads: pipeline };
  const links = { ...uploads, config: services.config, links: services.uploadLinks };
  const upload = services.uploadDrain.guard(createUploadHandler(uploads));
  const tus = createTusHandlers({
    baseUrl: services.baseUrl,
    intake: pipeline.intake,
    resumable: services.resumable,
  });
  const metrics = createMetricsHandler({
    metrics: services.metrics,
    token: services.config.metricsToken,
  });
  const rows: Row[] = [
    ["POST", UPLOAD_PATH, upload, uploadDoc],
    ["POST", TUS_PATH, services.uploadDrain.guard(tus.create), tusDocs.create],
    ["GET", `${TUS_PATH}/:id`, tus.status, tusDocs.status],
    ["PATCH", `${TUS_PATH}/:id`, services.uploadDrain.guard(tus.append), tusDocs.append],
    ["DELETE", `${TUS_PATH}/:id`, tus.terminate, tusDocs.terminate],
    ["GET", RETRIEVAL_PATH, services.retrieval.pieces, getPieceDoc],
    ["GET", FILE_PATH, services.retrieval.files, getFileDoc],
    ["GET", PIECE_GATEWAY_PATH, services.retrieval.pieceGateway, getGatewayPieceDoc],
    ["GET", PIECE_STATUS_PATH, services.retrieval.status, getPieceStatusDoc],
    [
      "GET",
      IPFS_PATH,
      createIpfsHandler({
        blocks: services.ipfsBlocks,
        maxWalkBlocks: services.config.ipfsMaxWalkBlocks,
      }),
      getIpfsDoc,
    ],
    ["POST", "/api/auth/signup", createSignupHandler(signup), signupDoc],
    ["POST", "/api/auth/signup/verify", createSignupVerifyHandler(signup), verifySignupDoc],
    ["GET", JWKS_PATH, createJwksHandler(services), getJwksDoc],
    ["GET", "/api/auth/wallet/nonce", createWalletNonceHandler(wallet), getWalletNonceDoc],
    ["POST", "/api/auth/wallet", createWalletSignInHandler(wallet), signInWithWalletDoc],
    ["GET", SESSION_PATH, createSessionInfoHandler(), getSessionDoc],
    ["POST", SESSION_PATH, createSessionStartHandler(services), startSessionDoc],
    ["DELETE", SESSION_PATH, createSessionEndHandler(services), endSessionDoc],
    ["POST", "/api/tokens/revoke", createRevokeHandler(services), revokeTokenDoc],
    ["GET", "/api/tokens", createTokenListHandler(services), listTokensDoc],
    ["GET", "/api/files", createFilesHandler(services), listFilesDoc],
    ["GET", "/api/usage", createUsageHandler(services), getUsageDoc],
    ["POST", "/api/deals", createDealCreateHandler(uploads), createDealDoc],
    ["POST", UPLOAD_LINKS_PATH, createUploadLinkHandler(links), createUploadLinkDoc],
    [
      "POST",
      `${UPLOAD_LINKS_PATH}/:link`,
      services.uploadDrain.guard(createLinkUploadHandler(links)),
      uploadThroughLinkDoc,
    ],
    ["POST", "/api/deals/:dealId/extend", createExtendDealHandler(services), extendDealDoc],
    ["GET", "/api/deals/:dealId", createGetDealHandler(services), getDealDoc],
    ["DELETE", "/api/deals/:dealId", createDeleteDealHandler(services), deleteDealDoc],
    ["GET", "/api/limits", createLimitsHandler(services), getLimitsDoc],
    ["GET", "/api/piece-cids", createPieceCidsInfoHandler(services.config), describePieceCidsDoc],
    ["POST", "/api/piece-cids", createComputePieceCidHandler(services), computePieceCidDoc],
    ["GET", "/healthz", createHealthHandler(services), getHealthDoc],
    ["GET", "/metrics", metrics, getMetricsDoc],
    ["GET", "/", web.page, getWebPageDoc],
    ["GET", "/app/:file", web.asset, getWebAssetDoc],
    ["GET", "/favicon.ico", web.favicon, getFaviconDoc],
    ["GET", "/docs/deprecations", deprecationsHandler, listDeprecationsDoc],
  ];
  const routes = rows.map(routeOf);
  const openApi = createOpenApiHandler(services.baseUrl, routes);
  routes.push({ method: "GET", path: "/openapi.json", handler: openApi, doc: getOpenApiDoc });
  return routes;
}

/**
 * What OPTIONS adds on the tus endpoint (protocol discovery): Tus-Max-Size is
 * the largest per-file cap of the tiers, unless one has none.
 */
export function tusDiscovery(config: Config, pathname: string): Record<string, string> | null {
  if (pathname !== TUS_PATH && !pathname.startsWith(`${TUS_PATH}/`)) return null;
  const caps = [config.sponsored, config.token, config.wallet].map((tier) => tier.maxFileBytes);
  const maxSize = caps.includes(null) ? null : Math.max(...(caps as number[]));
  return tusDiscoveryHeaders(maxSize);
}

function routeOf([method, path, handler, doc]: Row): Route {
  return { method, path, handler, doc };
}

function signupDepsOf(services: RouteServices): SignupDeps {
  return {
    mode: services.config.signup,
    tokens: services.tokens,
    verification: services.signupVerification,
    signupLimit: services.signupLimit,
    maxQuotaMb: Math.floor(services.config.token.dailyCapBytes / MIB),
    databaseIsPersistent: services.databasePersistent,
  };
}
