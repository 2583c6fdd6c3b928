/**
 * The ordered teardown of a running server. The order is the point:
 *
 * 1. the certificate reload stops, so the listener is not swapped mid-drain;
 * 2. uploads in flight get the grace period to finish, and are aborted after
 *    it (the listener's shutdown would cut their bodies off mid-stream);
 * 3. background work stops (key reload, probes, scrub, hashing, mail);
 * 4. the listener closes: no new connections, idle ones closed;
 * 5. storage closes last (the database, then the data directory's lock), as
 *    nothing above can write to it any more;
 *
 * then one "stopped" line says how it went, and the log is flushed.
 */
import type { UploadDrain } from "../http/pipeline/upload_drain.ts";
import type { Logger } from "../kernel/log.ts";
import type { Listener } from "./listen.ts";

export interface ShutdownSteps {
  listener: Listener;
  uploadDrain: UploadDrain;
  stopBackgroundWork(): Promise<void>;
  closeStorage(): Promise<void>;
  /** How long uploads in flight may take to finish, unless the caller says otherwise. */
  defaultTimeoutMs: number;
  logger: Logger & { flush?(): Promise<void> };
}

export type Shutdown = (options?: { timeoutMs?: number }) => Promise<void>;

/** The teardown as one function; it runs once, and every later call awaits that run. */
export function orderedShutdown(steps: ShutdownSteps): Shutdown {
  const { listener, uploadDrain, logger } = steps;
  let stopping: Promise<void> | null = null;
  return (options = {}) =>
    stopping ??= (async () => {
      const started = performance.now();
      await listener.stopCertificateReload();
      const inFlight = uploadDrain.inFlight;
      const { aborted } = await uploadDrain.drain(options.timeoutMs ?? steps.defaultTimeoutMs);
      if (aborted > 0) logger.warn("shutdown: aborted uploads still in flight", { aborted });
      await steps.stopBackgroundWork();
      const closed = await listener.close();
      if (!closed) logger.warn("shutdown: connections still open, closing anyway");
      await steps.closeStorage();
      logger.info("stopped", {
        uploadsFinished: inFlight - aborted,
        uploadsAborted: aborted,
        connectionsClosed: closed,
        ms: Math.round(performance.now() - started),
      });
      await logger.flush?.();
    })();
}
