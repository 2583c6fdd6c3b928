/**
 * The one log line per request. The fast path (a cached piece) logs through
 * a prebuilt template handed to the logger as raw JSON: building an object
 * and stringifying it per request cost a visible share of small-piece req/s.
 */
import type { Logger } from "../../kernel/log.ts";
import type { RequestContext } from "./context.ts";
import { RETRIEVAL_PATH } from "../retrieval/pieces.ts";

export interface RequestLog {
  /** A GET of a cached piece, answered 200 by the fast path. */
  fastPath(started: number): void;
  request(
    method: string,
    route: string,
    status: number,
    started: number,
    fields: RequestContext["logFields"],
  ): void;
}

const FAST_PATH_FIELDS = `"level":"info","msg":"request","method":"GET",` +
  `"route":"${RETRIEVAL_PATH}","status":200`;

export function createRequestLog(logger: Logger, enabled: boolean): RequestLog {
  const elapsedMs = (started: number) => Math.round((performance.now() - started) * 100) / 100;
  if (!enabled) return { fastPath() {}, request() {} };
  return {
    fastPath(started) {
      const line = `${FAST_PATH_FIELDS},"ms":${elapsedMs(started)},"cached":true`;
      if (logger.raw) logger.raw(line);
      else logger.info("request", JSON.parse(`{${line}}`));
    },
    request(method, route, status, started, fields) {
      logger.info("request", { method, route, status, ms: elapsedMs(started), ...fields });
    },
  };
}
