/**
 * A garbage-collection sweep: the bytes of pieces no deal wants any more go,
 * so the disk (or the bill) stops growing with every upload ever made. A
 * piece goes once every deal on it, and on any manifest listing it, ended at
 * least the grace period ago (domain/lifecycle_records.ts: LifecycleRecords). In order:
 *
 *   1. manifests uploaded before their listings were kept are read, so their
 *      deals keep what they list before anything is judged;
 *   2. removals an earlier sweep began and never finished (it died) are
 *      finished;
 *   3. every piece row, a page at a time in cid order, is judged in SQL, and
 *      those that may go are removed in batches (catalog/piece_removal.ts:
 *      re-checked under their cid locks, marked, deleted; the marks finished);
 *   4. objects in the store that no stored piece names (orphans, left by
 *      crashes before removals were crash-safe, or a failed migration) go
 *      once they were last written the grace period ago.
 *
 * Removals (and orphans) are paced to `removalsPerSecond`, and the loop
 * yields to the event loop between pages, so a sweep beside serving never
 * starves it. A dry run judges the same way and removes nothing (it records
 * old manifests' listings, which changes nothing anyone sees). The same
 * function backs `main.ts gc` and the server's own sweep (gc_service.ts).
 */
import { yieldToEventLoop } from "../kernel/turns.ts";
import { DAY_MS, toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import type { LifecycleRecords, SweepPageRow } from "../domain/lifecycle_records.ts";
import type { PieceStore } from "../driver/driver.ts";
import { manifestListingOf } from "../catalog/manifest_listing.ts";
import type { PieceRemoval } from "../catalog/piece_removal.ts";
import { Batcher } from "./batcher.ts";
import { RatePacer } from "./rate_pacer.ts";

/** Piece rows judged per query: small, because SQLite answers on the serving thread. */
const PAGE_SIZE = 256;
/** Pieces marked removed in one transaction, at most (fewer at low rates: --gc-rate / 10). */
const MAX_BATCH = 64;
/** Removal marks finished in one transaction. */
const FINISH_BATCH = 64;
/** Manifests whose listings are read per query. */
const MANIFEST_BATCH = 64;

export interface SweepOptions {
  store: PieceStore;
  lifecycle: LifecycleRecords;
  removal: PieceRemoval;
  clock: Clock;
  /** Days a piece is kept after its last deal ended (--retention-grace-days). */
  graceDays: number;
  /** Judge deals and orphans as at this instant, in Unix ms (`gc --as-of`); default now. */
  asOf?: number;
  /** Pieces and orphans removed per second at most (--gc-rate). */
  removalsPerSecond: number;
  /** Judge, report, remove nothing. */
  dryRun?: boolean;
  /** Aborting stops the sweep between two removals; it then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Told of each piece or orphan removed (or that would be, in a dry run), as it is. */
  onRemoved?(removed: RemovedPiece): void;
}

export interface RemovedPiece {
  cid: string;
  size: number;
  /** An object no row named, rather than a piece whose deals ended. */
  orphan: boolean;
}

export interface SweepReport {
  /** The instant deals and orphans were judged at. */
  asOf: string;
  /** Deals that ended at or before this no longer keep their piece. */
  endedBy: string;
  dryRun: boolean;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  /** Piece rows judged. */
  pieces: number;
  /** Pieces removed (a dry run: that would be), and their bytes. */
  removedPieces: number;
  removedBytes: number;
  /** Pieces judged removable that a deal wanted again by the time their lock was held. */
  keptOnRecheck: number;
  /** Removals an earlier sweep left unfinished, finished by this one. */
  resumed: number;
  /** Manifests uploaded before listings were kept, read and listed by this one. */
  manifestsListed: number;
  /** Orphans removed (a dry run: that would be), and their bytes. */
  removedOrphans: number;
  removedOrphanBytes: number;
  /** Orphans written within the grace period: left for a later sweep. */
  youngOrphans: number;
}

export async function sweepPieces(options: SweepOptions): Promise<SweepReport> {
  const started = performance.now();
  const startedAt = options.clock.now();
  const asOf = options.asOf ?? startedAt;
  const cutoff = asOf - options.graceDays * DAY_MS;
  const pacer = new RatePacer({ perSecond: options.removalsPerSecond });
  const report: SweepReport = {
    asOf: toRfc3339(asOf),
    endedBy: toRfc3339(cutoff),
    dryRun: options.dryRun === true,
    startedAt: toRfc3339(startedAt),
    finishedAt: "",
    seconds: 0,
    pieces: 0,
    removedPieces: 0,
    removedBytes: 0,
    keptOnRecheck: 0,
    resumed: 0,
    manifestsListed: 0,
    removedOrphans: 0,
    removedOrphanBytes: 0,
    youngOrphans: 0,
  };
  report.manifestsListed = await listOldManifests(options, pacer);
  if (!report.dryRun) report.resumed = await resumeRemovals(options, pacer);
  await sweepPieceRows(options, report, pacer);
  await sweepOrphans(options, { writtenBy: cutoff, report, pacer });
  const finishedAt = options.clock.now();
  report.finishedAt = toRfc3339(finishedAt);
  report.seconds = Math.round(performance.now() - started) / 1000;
  if (!report.dryRun) {
    await options.lifecycle.recordSweep({
      startedAt: report.startedAt,
      finishedAt: report.finishedAt,
      removedPieces: report.removedPieces,
      removedBytes: report.removedBytes,
      removedOrphans: report.removedOrphans,
    });
  }
  return report;
}

/** Step 1: the listings of manifests uploaded before they were recorded at upload. */
async function listOldManifests(options: SweepOptions, pacer: RatePacer): Promise<number> {
  const { lifecycle, store, signal } = options;
  let listed = 0;
  for (let cids; (cids = await lifecycle.unlistedManifests(MANIFEST_BATCH)).length > 0;) {
    for (const cid of cids) {
      signal?.throwIfAborted();
      await lifecycle.recordManifestListing(cid, await manifestListingOf(store, cid));
      listed++;
      await pacer.take(1, signal);
    }
  }
  return listed;
}

/** Step 2: removals begun by a sweep that died before it finished them. */
async function resumeRemovals(options: SweepOptions, pacer: RatePacer): Promise<number> {
  const { lifecycle, removal, clock, signal } = options;
  const finished: number[] = [];
  for (const { mark, cid } of await lifecycle.unfinishedRemovals()) {
    signal?.throwIfAborted();
    if (await removal.resume(mark, cid)) finished.push(mark);
    await pacer.take(1, signal);
  }
  await lifecycle.finishRemovals(finished, toRfc3339(clock.now()));
  return finished.length;
}

/** Step 3: every piece row, judged a page at a time; those that may go, removed in batches. */
async function sweepPieceRows(
  options: SweepOptions,
  report: SweepReport,
  pacer: RatePacer,
): Promise<void> {
  const { lifecycle, signal } = options;
  const batchSize = Math.max(1, Math.min(MAX_BATCH, Math.floor(options.removalsPerSecond / 10)));
  const batch = new Batch(options, report, pacer);
  try {
    let cursor = "";
    for (let page; (page = await lifecycle.sweepPage(cursor, report.endedBy, PAGE_SIZE)).length;) {
      report.pieces += page.length;
      cursor = page.at(-1)!.cid;
      for (const row of page) {
        if (!row.removable) continue;
        signal?.throwIfAborted();
        if (report.dryRun) {
          report.removedPieces++;
          report.removedBytes += row.size;
          options.onRemoved?.({ cid: row.cid, size: row.size, orphan: false });
        } else if (batch.add(row) >= batchSize) {
          await batch.remove();
        }
      }
      // SQLite answers synchronously: without this, pages with nothing to remove would run
      // back to back and hold the thread that serves requests.
      await yieldToEventLoop();
    }
    await batch.remove();
  } finally {
    // Removals done so far are finished even when the sweep stops; a mark left pending by a
    // failure here is resumed by the next sweep.
    await batch.finish().catch(() => {});
  }
}

/**
 * Pieces judged removable, removed a batch at a time: one transaction marks a
 * batch (on SQLite its commit waits for the disk on the serving thread, so
 * one per piece would take a share of every second from serving), and the
 * marks are finished in larger batches still.
 */
class Batch {
  readonly #pending: SweepPageRow[] = [];
  readonly #marks: number[] = [];

  constructor(
    readonly options: SweepOptions,
    readonly report: SweepReport,
    readonly pacer: RatePacer,
  ) {}

  /** Adds a removable piece; the batch's size. */
  add(row: SweepPageRow): number {
    return this.#pending.push(row);
  }

  async remove(): Promise<void> {
    const { removal, clock, signal } = this.options;
    const rows = this.#pending.splice(0);
    if (rows.length === 0) return;
    await this.pacer.take(rows.length, signal);
    const at = toRfc3339(clock.now());
    const marks = await removal.removeAll(rows.map((row) => row.cid), this.report.endedBy, at);
    const removed = new Set(marks.map((mark) => mark.cid));
    this.report.keptOnRecheck += rows.length - removed.size;
    for (const row of rows) {
      if (!removed.has(row.cid)) continue;
      this.report.removedPieces++;
      this.report.removedBytes += row.size;
      this.options.onRemoved?.({ cid: row.cid, size: row.size, orphan: false });
    }
    this.#marks.push(...marks.map((mark) => mark.mark));
    if (this.#marks.length >= FINISH_BATCH) await this.finish();
  }

  async finish(): Promise<void> {
    if (this.#marks.length === 0) return;
    const at = toRfc3339(this.options.clock.now());
    await this.options.lifecycle.finishRemovals(this.#marks.splice(0), at);
  }
}

/** Step 4: objects no stored piece names, removed once written the grace period ago. */
async function sweepOrphans(
  options: SweepOptions,
  context: { writtenBy: number; report: SweepReport; pacer: RatePacer },
): Promise<void> {
  const { store, lifecycle, signal } = options;
  const { report } = context;
  const keys = new Batcher<string>({
    size: PAGE_SIZE,
    flush: async (batch) => {
      const stored = new Set(await lifecycle.storedAmong(batch));
      for (const key of batch) {
        if (stored.has(key)) continue;
        signal?.throwIfAborted();
        const size = await removeOrphan(options, key, context);
        if (size === null) continue;
        report.removedOrphans++;
        report.removedOrphanBytes += size;
        options.onRemoved?.({ cid: key, size, orphan: true });
      }
      await yieldToEventLoop();
    },
  });
  for await (const key of store.list()) await keys.add(key);
  await keys.flush();
}

/** The orphan's size if it is removed (would be, in a dry run); null if it stays. */
async function removeOrphan(
  options: SweepOptions,
  key: string,
  context: { writtenBy: number; report: SweepReport; pacer: RatePacer },
): Promise<number | null> {
  const { report, writtenBy } = context;
  if (report.dryRun) {
    const stat = await options.store.stat(key);
    if (stat === null) return null;
    if (stat.modifiedAt > writtenBy) report.youngOrphans++;
    return stat.modifiedAt > writtenBy ? null : stat.size;
  }
  await context.pacer.take(1, options.signal);
  const outcome = await options.removal.removeOrphan(key, writtenBy);
  if (!outcome.removed && outcome.why === "young") report.youngOrphans++;
  return outcome.removed ? outcome.size : null;
}
