/**
 * Certificate renewal without a restart: when --tls-cert / --tls-key change
 * on disk and the new pair checks out, new connections get it; a pair that
 * does not check out is logged and the one in use stays.
 *
 * The switch replaces the listener (see swappable_server.ts). Connections
 * the own accept loop accepted carry on untouched; under Deno.serve the
 * switch cuts off HTTP/1.1 uploads still sending their bodies, so it then
 * waits for a moment without uploads in flight, for at most maxUploadWaitMs
 * (the shutdown grace): renewals come weeks before expiry, so a late switch
 * costs nothing, while a server never idle must still switch in the end.
 * HTTP/2 uploads survive the switch either way.
 */
import type { Logger } from "../kernel/log.ts";
import { ListenerLostError } from "./swappable_server.ts";
import type { SwappableServer } from "./swappable_server.ts";
import type { TlsConfig, TlsPair } from "./tls_files.ts";
import { watchTlsFiles } from "./tls_files.ts";
import { sleep } from "../kernel/clock.ts";

export interface TlsReloadOptions {
  files: TlsConfig;
  server: SwappableServer;
  /** The pair served now. */
  current: TlsPair;
  /** How often the files are checked. */
  pollIntervalMs: number;
  uploadsInFlight(): number;
  /** Longest wait for uploads in flight before switching anyway. */
  maxUploadWaitMs: number;
  logger: Logger;
}

/** How often a pending switch looks at the uploads in flight. */
const UPLOAD_CHECK_MS = 100;

/** Starts watching; stop() ends it, cutting short a wait for uploads (without switching). */
export function startTlsReload(options: TlsReloadOptions): { stop(): Promise<void> } {
  const { files, server, logger } = options;
  const stopping = new AbortController();
  const watch = watchTlsFiles({
    files,
    current: options.current,
    intervalMs: options.pollIntervalMs,
    onRejected: (error) =>
      logger.error(
        error instanceof ListenerLostError
          ? "TLS reload lost the listening address; not serving until it can be bound again"
          : "new TLS files cannot be used; still serving the previous certificate",
        { error: error.message },
      ),
    async onPair(pair) {
      const started = performance.now();
      const left = await quietMoment(options, stopping.signal);
      if (stopping.signal.aborted) return;
      await server.replaceCertificate(pair);
      const fields = {
        cert: files.certFile,
        subject: pair.certificate.subject,
        serial: pair.certificate.serial,
        notAfter: pair.certificate.notAfter,
        waitedMs: Math.round(performance.now() - started),
      };
      if (left === 0) logger.info("TLS certificate reloaded", fields);
      else {
        logger.warn("TLS certificate reloaded with uploads in flight: HTTP/1.1 ones were cut off", {
          ...fields,
          uploadsInFlight: left,
        });
      }
    },
  });
  return {
    async stop() {
      stopping.abort();
      await watch.stop();
    },
  };
}

/** Resolves with 0 once no upload is in flight, or with how many still are at the deadline. */
async function quietMoment(options: TlsReloadOptions, signal: AbortSignal): Promise<number> {
  // Under the own accept loop a switch leaves accepted connections alone: no need to wait.
  if (!options.server.swapCutsUploads) return 0;
  let inFlight = options.uploadsInFlight();
  if (inFlight === 0) return 0;
  options.logger.info("new TLS certificate waits for uploads in flight", { uploads: inFlight });
  const deadline = Date.now() + options.maxUploadWaitMs;
  while (inFlight > 0 && Date.now() < deadline && !signal.aborted) {
    await sleep(UPLOAD_CHECK_MS);
    inFlight = options.uploadsInFlight();
  }
  return inFlight;
}
