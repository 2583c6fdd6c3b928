/**
 * The fault bench's figures for one fault (issue 24's "Measure it"), from the
 * load's request records (fault_load.ts) and the fault's window:
 *
 *   - slowOutside: requests that took longer than 2 s and lay wholly outside
 *     the fault window plus 2 s (they ended before it began, or started 2 s
 *     or more after it ended); goal 0;
 *   - during: of the requests started inside the window, the share answered
 *     503 with Retry-After, the share answered 200 anyway (what did not need
 *     the missing backend), and the rest (no answer, other statuses);
 *   - recoveryMs: from the end of the fault to the end of the last request
 *     that failed after it (0 when none did); goal < 5 s.
 */
import type { RequestRecord } from "./fault_load.ts";

export const SLOW_MS = 2000;
export const GRACE_MS = 2000;

export interface FaultWindow {
  /** ms since the epoch. */
  start: number;
  end: number;
}

export interface FaultFigures {
  requests: number;
  slowOutside: number;
  /** The slowest request outside the window plus GRACE_MS, in ms (0 when none). */
  slowestOutsideMs: number;
  /** The slowest request of the whole run, in ms. */
  slowestMs: number;
  during: { requests: number; offlineShare: number; okShare: number; otherShare: number };
  /** Statuses of the requests during the window that were neither 200 nor 503 + Retry-After. */
  otherStatuses: Record<string, number>;
  recoveryMs: number;
}

export function faultFigures(records: readonly RequestRecord[], window: FaultWindow): FaultFigures {
  const endOf = (r: RequestRecord) => r.startedAt + r.ms;
  const outside = records.filter((r) =>
    endOf(r) < window.start || r.startedAt >= window.end + GRACE_MS
  );
  const slow = outside.filter((r) => r.ms > SLOW_MS);
  const inWindow = records.filter((r) => r.startedAt >= window.start && r.startedAt <= window.end);
  const offline = inWindow.filter((r) => r.status === 503 && r.retryAfter).length;
  const ok = inWindow.filter((r) => r.status === 200).length;
  const otherStatuses: Record<string, number> = {};
  for (const r of inWindow) {
    if (r.status === 200 || (r.status === 503 && r.retryAfter)) continue;
    const key = r.status === 503 ? "503 without Retry-After" : String(r.status);
    otherStatuses[key] = (otherStatuses[key] ?? 0) + 1;
  }
  const share = (n: number) => inWindow.length === 0 ? 0 : round(n / inWindow.length, 3);
  const failedAfter = records.filter((r) => r.startedAt >= window.end && r.status !== 200);
  const lastFailureEnd = Math.max(window.end, ...failedAfter.map(endOf));
  return {
    requests: records.length,
    slowOutside: slow.length,
    slowestOutsideMs: Math.round(Math.max(0, ...outside.map((r) => r.ms))),
    slowestMs: Math.round(Math.max(0, ...records.map((r) => r.ms))),
    during: {
      requests: inWindow.length,
      offlineShare: share(offline),
      okShare: share(ok),
      otherShare: share(inWindow.length - offline - ok),
    },
    otherStatuses,
    recoveryMs: Math.round(lastFailureEnd - window.end),
  };
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
