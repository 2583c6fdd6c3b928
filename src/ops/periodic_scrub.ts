/**
 * The server's own scrub (`--scrub-interval`, off by default): one pass over
 * every piece (ops/scrub.ts), run every interval as the server's "scrub" job
 * (server/jobs.ts). What a pass finds is logged: a line per failing piece as
 * it is found (an error, for alerting) and a summary at the end. Stopping
 * aborts a pass in progress between two reads.
 */
import type { Logger } from "../kernel/log.ts";
import { scrubPieces } from "./scrub.ts";
import type { ScrubOptions } from "./scrub.ts";

export interface LoggedScrubOptions extends Omit<ScrubOptions, "signal"> {
  logger: Logger;
}

/** One pass that logs what it finds; it rejects (after logging why) when it failed. */
export function loggedScrubPass(
  options: LoggedScrubOptions,
): (signal: AbortSignal) => Promise<void> {
  const { logger, ...scrub } = options;
  return async (signal) => {
    try {
      const report = await scrubPieces({
        ...scrub,
        signal,
        onFailure: (failure) => {
          scrub.onFailure?.(failure);
          logger.error("scrub: stored piece failed verification", { ...failure });
        },
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
      throw error;
    }
  };
}
