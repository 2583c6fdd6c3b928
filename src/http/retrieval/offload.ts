/**
 * Offloading to nginx (--x-accel-redirect): the service makes every decision
 * about a retrieval (existence, corrupt marks, conditional requests, the range
 * asked for, every header) and, for a piece whose bytes are a local file,
 * answers with `X-Accel-Redirect: <prefix><its path under the data
 * directory>` and no body; nginx then sends the file itself (sendfile, and
 * the range, which it cuts from the same Range header). The composition root
 * builds it from the store's optional localFileOf (server/piece_offload.ts),
 * so nothing here knows a path.
 *
 * Offloaded only when nginx's answer is the service's: no Range header, or
 * one range the service would honour. A Range the service ignores (several
 * ranges, a failed If-Range, a malformed header) or refuses (416) is
 * answered by the service, so nginx never decides differently. And only a
 * request that came through a trusted proxy (context.viaTrustedProxy) is
 * offloaded: a client that reaches the service directly would get an empty
 * body with a header nothing turns into bytes.
 */
import type { BytesAnswer } from "./conditional_answer.ts";

export interface PieceOffload {
  /** The X-Accel-Redirect value for the piece stored under key; null to send it ourselves. */
  redirectFor(key: string): string | null;
}

export function offloadable(answer: BytesAnswer): boolean {
  return answer.status === 206 || !answer.ignoredRange;
}
