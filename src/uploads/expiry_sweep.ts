/**
 * The server's sweep of resumable uploads (its "resumable-expiry" job,
 * server/jobs.ts, every interval): uploads past their expiry go (their
 * record, their bytes and their cap reservation), and once an hour partial
 * bytes that no record names (a crash between the two writes of a creation
 * or a removal) go too, once they are an hour old. Expiry is also checked on
 * every request for an upload, so the interval bounds only how long an
 * abandoned upload holds its reservation. Each sweep also lets go of the
 * reservations of sponsored uploads idle for 10 minutes (resumable.ts).
 */
import type { Logger } from "../kernel/log.ts";
import type { ResumableUploads } from "./resumable.ts";
import type { ResumableUploadRecords } from "../domain/resumable_upload_records.ts";
import type { PartialStore } from "../driver/driver.ts";

const HOUR_MS = 3_600_000;

export interface ExpirySweepOptions {
  uploads: ResumableUploads;
  logger: Logger;
}

export class ExpirySweep {
  readonly #options: ExpirySweepOptions;
  #nextOrphanSweep = 0;

  constructor(options: ExpirySweepOptions) {
    this.#options = options;
  }

  /** One sweep, ended early by the signal; rejects (after logging why) when it failed. */
  async sweep(signal: AbortSignal): Promise<void> {
    const { uploads, logger } = this.#options;
    try {
      let expired = 0;
      for (let removed = -1; removed !== 0 && !signal.aborted;) {
        removed = await uploads.sweepExpired();
        expired += removed;
      }
      if (expired > 0) logger.info("removed expired resumable uploads", { uploads: expired });
      const idle = await uploads.releaseIdleReservations();
      if (idle > 0) logger.info("released the reservations of idle sponsored uploads", { idle });
      if (Date.now() >= this.#nextOrphanSweep && !signal.aborted) {
        this.#nextOrphanSweep = Date.now() + HOUR_MS;
        const orphans = await uploads.sweepOrphans(HOUR_MS);
        if (orphans > 0) logger.info("removed orphaned resumable upload bytes", { orphans });
      }
    } catch (error) {
      logger.warn("resumable upload sweep failed", { error: String(error) });
      throw error;
    }
  }
}

/** Removes partial bytes no record names (left by a crash) last written before `beforeMs`. */
export async function removeOrphanPartials(
  records: ResumableUploadRecords,
  partials: PartialStore,
  beforeMs: number,
): Promise<number> {
  let removed = 0;
  for await (const partial of partials.list()) {
    if (partial.modifiedMs >= beforeMs) continue;
    if (await records.get(partial.id) !== null) continue;
    await partials.remove(partial.id);
    removed++;
  }
  return removed;
}
