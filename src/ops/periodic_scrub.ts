/**
 * The server's own scrub (`--scrub-interval`, off by default): one pass over
 * every piece (ops/scrub.ts) every interval (periodic_pass.ts). What a pass
 * finds is logged: a line per failing piece as it is found (an error, for
 * alerting) and a summary at the end. Stopping aborts a pass in progress
 * between two reads.
 */
import type { Logger } from "../kernel/log.ts";
import { PeriodicPass } from "./periodic_pass.ts";
import type { ScrubFailure, ScrubReport } from "./scrub.ts";

export interface PeriodicScrubOptions {
  intervalMs: number;
  /** One pass, telling onFailure what fails as it is found; it rejects soon after an abort. */
  scrub(signal: AbortSignal, onFailure: (failure: ScrubFailure) => void): Promise<ScrubReport>;
  logger: Logger;
}

export class PeriodicScrub {
  readonly #periodic: PeriodicPass;

  constructor(options: PeriodicScrubOptions) {
    const { logger } = options;
    this.#periodic = new PeriodicPass({
      intervalMs: options.intervalMs,
      pass: async (signal) => {
        try {
          const report = await options.scrub(signal, (failure) => {
            logger.error("scrub: stored piece failed verification", { ...failure });
          });
          logger.info("scrub finished", {
            pieces: report.pieces,
            bytes: report.bytes,
            seconds: report.seconds,
            corrupt: report.corrupt.length,
            missing: report.missing.length,
            cleared: report.cleared.length,
            orphans: report.orphans.length,
          });
        } catch (error) {
          if (!signal.aborted) logger.error("scrub failed", { error: String(error) });
        }
      },
    });
  }

  /** Stops scheduling, aborts a pass in progress and waits for it to end. */
  stop(): Promise<void> {
    return this.#periodic.stop();
  }
}
