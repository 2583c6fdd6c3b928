/**
 * GET /healthz — whether the storage backend and the database can be used,
 * the wallet tier's chain, when garbage collection last swept, and how each
 * background job (a sweep, a watch, a probe) last ran and when it runs next,
 * the longest the event loop was held lately, and with a hand-off, the storage provider and whether it answers.
 * An unreachable chain RPC, or a job that failed, does not make the server
 * degraded: retrievals and the other tiers still work, and a load balancer
 * must not take the server out of rotation for someone else's RPC (a job's
 * failure is the storage's or the database's, which say so themselves).
 */
import type { PieceStore } from "../../driver/driver.ts";
import type { PieceDigests } from "../../catalog/digests.ts";
import type { UploadDrain } from "../pipeline/upload_drain.ts";
import { jsonResponse } from "../pipeline/json.ts";
import type { Handler } from "../pipeline/router.ts";
import type {
  DatabaseHealth,
  GcHealth,
  HandoffHealth,
  Health,
  JobHealth,
  WalletHealth,
} from "../../kernel/health_wire.ts";
import type { WalletChain } from "../../wallet/chain.ts";

export interface HealthDeps {
  store: PieceStore;
  databaseHealth(): Promise<DatabaseHealth>;
  digests: Pick<PieceDigests, "status">;
  uploadDrain: Pick<UploadDrain, "inFlight">;
  /** null: this server has no wallet tier. */
  walletChain: Pick<WalletChain, "health"> | null;
  /** Garbage collection: the interval, the grace period, the last sweep. */
  gc: { health(): Promise<GcHealth> };
  /** The jobs this server runs by itself: each one's last run and next. */
  jobs: { health(): JobHealth[] };
  /** The hand-off to a storage provider; null with --handoff off (then /healthz omits it). */
  handoff: { health(): Promise<HandoffHealth> } | null;
  /** The longest the event loop was held in the last 30 to 60 s, in ms. */
  eventLoop: { recentMax(): number };
}

export function createHealthHandler(deps: HealthDeps): Handler {
  return async () => {
    const [storage, database, gc] = await Promise.all([
      deps.store.check(),
      deps.databaseHealth(),
      deps.gc.health(),
    ]);
    const ok = storage.ok && database.ok && database.persistent;
    const health: Health = {
      status: ok ? "ok" : "degraded",
      storage: { ok: storage.ok, source: deps.store.source, detail: storage.detail },
      database,
      // Pieces acknowledged but not yet hashed (SHA-256 is computed after the upload).
      digests: deps.digests.status(),
      uploads: { inFlight: deps.uploadDrain.inFlight },
      memory: memoryMiB(),
      eventLoop: { maxDelayMs: Math.round(deps.eventLoop.recentMax() * 10) / 10 },
      wallet: await walletHealth(deps.walletChain),
      gc,
      jobs: deps.jobs.health(),
      // A provider that does not answer leaves the service ok: uploads and reads go on.
      ...(deps.handoff ? { handoff: await deps.handoff.health() } : {}),
    };
    // Degraded is an outage to wait out, like every other 503 of the service.
    return jsonResponse(ok ? 200 : 503, health, ok ? {} : { "retry-after": "5" });
  };
}

async function walletHealth(chain: HealthDeps["walletChain"]): Promise<WalletHealth> {
  if (chain === null) {
    return {
      enabled: false,
      ok: false,
      chainId: null,
      rpcChainId: null,
      lastError: null,
      lastSuccessAt: null,
    };
  }
  return { enabled: true, ...await chain.health() };
}

function memoryMiB(): Health["memory"] {
  const usage = Deno.memoryUsage();
  const mib = (n: number) => Math.round((n / 1048576) * 10) / 10;
  return {
    rssMiB: mib(usage.rss),
    heapUsedMiB: mib(usage.heapUsed),
    heapTotalMiB: mib(usage.heapTotal),
    externalMiB: mib(usage.external),
  };
}
