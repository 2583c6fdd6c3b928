/** What a handler gets besides the request. */
import type { Caller } from "../../auth/caller.ts";
import type { MinBodyRate } from "../../kernel/streams/read_watchdog.ts";

export interface RequestContext {
  url: URL;
  params: Record<string, string>;
  /** Key of the client's per-IP caps: "v4:1.2.3.4" or "v6:2001:db8:0:1::/64". */
  clientKey: string;
  /**
   * Whether the request came through a proxy in --trusted-proxies (the peer is
   * one and it sent X-Forwarded-For): only such a request may be answered with
   * X-Accel-Redirect, which only that proxy turns into bytes.
   */
  viaTrustedProxy: boolean;
  /** Aborted when the server gives up on in-flight requests at shutdown. */
  signal: AbortSignal;
  /** Resolves the caller once (token, or sponsored when no credentials were sent). */
  caller(): Promise<Caller>;
  /**
   * Checks the request's credentials again (a token revoked or expired since
   * caller() is 401 now): before a commit that a long body kept waiting.
   */
  callerStillValid(): Promise<void>;
  /** A body that sends nothing for this long is abandoned with 408 request_timeout. */
  bodyIdleTimeoutMs: number;
  /** A body slower than this on average (after its grace) is abandoned with 408; null: none. */
  bodyMinRate: MinBodyRate | null;
  /** Reads the body as a JSON object (≤ 64 KiB, idle timeout and rate applied); 400/408/413 otherwise. */
  readJson(): Promise<Record<string, unknown>>;
  /** Extra fields for the request's log line, filled in by handlers. */
  logFields: Record<string, string | number | boolean>;
}
